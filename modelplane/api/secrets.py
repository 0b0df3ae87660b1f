"""Recognise credentials written where plain text belongs, with detect-secrets' own detectors.

Only the pattern detectors run (keys with a known shape); the entropy detectors would flag
every long engine flag. detect-secrets is imported on first use, and only for text that one of
its patterns finds: it pulls in `requests`.
"""
from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

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


# detect-secrets' detectors that run, in the order they are tried: (plugin module, class).
PLUGINS = (("aws", "AWSKeyDetector"), ("private_key", "PrivateKeyDetector"), ("github_token", "GitHubTokenDetector"),
           ("gitlab_token", "GitLabTokenDetector"), ("openai", "OpenAIDetector"), ("slack", "SlackDetector"),
           ("stripe", "StripeDetector"), ("jwt", "JwtTokenDetector"), ("azure_storage_key", "AzureStorageKeyDetector"),
           ("basic_auth", "BasicAuthDetector"), ("pypi_token", "PypiTokenDetector"), ("npm", "NpmDetector"),
           ("sendgrid", "SendGridDetector"), ("twilio", "TwilioKeyDetector"), ("discord", "DiscordBotTokenDetector"),
           ("artifactory", "ArtifactoryDetector"))
# Detectors that only filter what their denylist finds (JWTs must also decode).
_FILTERS = ("JwtTokenDetector",)


@lru_cache(maxsize=1)
def _detectors():
    from importlib import import_module

    from detect_secrets.plugins.base import RegexBasedDetector

    extra = [type(name.replace(" ", "") + "Detector", (RegexBasedDetector,), {"secret_type": name, "denylist": pats})()
             for name, pats in EXTRA.items()]
    return (*extra, *(getattr(import_module(f"detect_secrets.plugins.{module}"), cls)() for module, cls in PLUGINS))


def _plugin_stamp() -> str | None:
    """What identifies the installed detectors' code (their files' paths, sizes and times), found
    without importing detect-secrets; None if it cannot be told."""
    import hashlib
    from importlib.util import find_spec

    try:
        spec = find_spec("detect_secrets")
        folder = Path(next(iter(spec.submodule_search_locations))) / "plugins"
        parts = [str(folder)]
        for module in ("base", *(m for m, _ in PLUGINS)):
            st = (folder / f"{module}.py").stat()
            parts.append(f"{module}:{st.st_size}:{st.st_mtime_ns}")
    except (AttributeError, TypeError, StopIteration, ValueError, OSError):
        return None
    return hashlib.sha256(repr((parts, PLUGINS, _FILTERS)).encode()).hexdigest()[:16]


def _denylists():
    """Every pattern detect-secrets' detectors search for, as (pattern, flags); None if one of
    them may report text that none of its patterns finds (then no screen is sound)."""
    from detect_secrets.plugins.base import RegexBasedDetector

    out = []
    for detector in _detectors()[len(EXTRA):]:
        cls = type(detector)
        if not isinstance(detector, RegexBasedDetector) or \
                (cls.analyze_string is not RegexBasedDetector.analyze_string and cls.__name__ not in _FILTERS):
            return None
        out += [(p.pattern, p.flags) for p in detector.denylist]
    return out


@lru_cache(maxsize=1)
def _screen() -> tuple | None:
    """The patterns of every detector, compiled: text that none of them finds is no credential
    any detector reports (each reports only what its denylist's patterns find), so it needs no
    detect-secrets, whose import costs ~0.15 s. detect-secrets' own patterns are kept in the
    user's cache directory, stamped with its files; None when they cannot be had without it."""
    import json

    from ..usercache import cache_dir, write_whole

    stamp, folder = _plugin_stamp(), cache_dir()
    if stamp is None or folder is None:
        return None
    path = folder / f"secret-patterns-{stamp}.json"
    try:
        patterns = [(str(p), int(f)) for p, f in json.loads(path.read_text())]
    except (OSError, ValueError, TypeError):
        patterns = _denylists()
        if patterns is None:
            return None
        write_whole(path, json.dumps(patterns).encode())
    try:
        return (*(p for pats in EXTRA.values() for p in pats), *(re.compile(p, f) for p, f in patterns))
    except re.error:
        return None


@lru_cache(maxsize=4096)
def secret_kind(text: str) -> str | None:
    """What kind of credential `text` holds ('AWS Access Key', ...), or None."""
    if not isinstance(text, str) or len(text) < 8:
        return None
    screen = _screen()
    if screen is not None and not any(p.search(text) for p in screen):
        return None
    for detector in _detectors():
        if any(True for _ in detector.analyze_string(text)):
            return detector.secret_type
    return None


def looks_secret(text) -> bool:
    return secret_kind(text) is not None
