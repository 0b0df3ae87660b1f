"""Recognise credentials written where plain text belongs, with detect-secrets' own detectors.

Only the pattern detectors run (keys with a known shape); the entropy detectors would flag
every long engine flag. detect-secrets is imported on first use: it pulls in `requests`.
"""
from __future__ import annotations

import re
from functools import lru_cache

# Shapes detect-secrets 1.5 has no detector for, as its RegexBasedDetector denylists.
EXTRA = {
    # Hugging Face user access tokens: hf_ and 34 letters.
    "Hugging Face Token": (re.compile(r"\bhf_[A-Za-z0-9]{30,}\b"),),
    # Google API keys and a service account key file's marker.
    "Google Cloud Key": (re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b"), re.compile(r'"type"\s*:\s*"service_account"')),
    # A kubeconfig (or any Kubernetes credential document) pasted as text.
    "Kubeconfig": (re.compile(r"(client-key-data|client-certificate-data|certificate-authority-data)\s*:"),
                   re.compile(r"apiVersion\s*:[\s\S]*(clusters|users|contexts)\s*:")),
}


@lru_cache(maxsize=1)
def _detectors():
    from detect_secrets.plugins.artifactory import ArtifactoryDetector
    from detect_secrets.plugins.aws import AWSKeyDetector
    from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
    from detect_secrets.plugins.base import RegexBasedDetector
    from detect_secrets.plugins.basic_auth import BasicAuthDetector
    from detect_secrets.plugins.discord import DiscordBotTokenDetector
    from detect_secrets.plugins.github_token import GitHubTokenDetector
    from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
    from detect_secrets.plugins.jwt import JwtTokenDetector
    from detect_secrets.plugins.npm import NpmDetector
    from detect_secrets.plugins.openai import OpenAIDetector
    from detect_secrets.plugins.private_key import PrivateKeyDetector
    from detect_secrets.plugins.pypi_token import PypiTokenDetector
    from detect_secrets.plugins.sendgrid import SendGridDetector
    from detect_secrets.plugins.slack import SlackDetector
    from detect_secrets.plugins.stripe import StripeDetector
    from detect_secrets.plugins.twilio import TwilioKeyDetector

    extra = [type(name.replace(" ", "") + "Detector", (RegexBasedDetector,), {"secret_type": name, "denylist": pats})()
             for name, pats in EXTRA.items()]
    return (*extra, AWSKeyDetector(), PrivateKeyDetector(), GitHubTokenDetector(), GitLabTokenDetector(),
            OpenAIDetector(), SlackDetector(), StripeDetector(), JwtTokenDetector(), AzureStorageKeyDetector(),
            BasicAuthDetector(), PypiTokenDetector(), NpmDetector(), SendGridDetector(), TwilioKeyDetector(),
            DiscordBotTokenDetector(), ArtifactoryDetector())


@lru_cache(maxsize=4096)
def secret_kind(text: str) -> str | None:
    """What kind of credential `text` holds ('AWS Access Key', ...), or None."""
    if not isinstance(text, str) or len(text) < 8:
        return None
    for detector in _detectors():
        if any(True for _ in detector.analyze_string(text)):
            return detector.secret_type
    return None


def looks_secret(text) -> bool:
    return secret_kind(text) is not None
