"""Shared pydantic base: camelCase YAML names, unknown fields rejected, immutable values."""
from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError


class Model(BaseModel):
    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=True,
                              frozen=True, str_strip_whitespace=True, strict=True, defer_build=True)


def invalid(message: str, fix: str) -> PydanticCustomError:
    """A validation error that carries its own fix hint (read back by api.errors)."""
    return PydanticCustomError("modelplane", "{message}", {"message": message, "fix": fix})


def require_one(model: BaseModel, fields: tuple[str, ...], message: str, fix: str) -> None:
    """Raise `invalid(message, fix)` unless exactly one of `fields` is set on `model`."""
    if sum(getattr(model, f) is not None for f in fields) != 1:
        raise invalid(message, fix)


_DNS_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")


def _dns_label(max_len: int):
    def check(value: str) -> str:
        if not _DNS_LABEL.match(value) or len(value) > max_len:
            suggestion = re.sub(r"[^a-z0-9-]+", "-", value.lower()).strip("-")[:max_len] or "my-name"
            raise invalid(f"{value!r} is not a valid name (lowercase letters, digits and '-', "
                          f"starting with a letter, at most {max_len} characters)",
                          f"use a name such as {suggestion!r}")
        return value
    return AfterValidator(check)


# Object names end up inside Kubernetes names with suffixes (replica, role), so leave room.
Name = Annotated[str, _dns_label(40)]
Namespace = Annotated[str, _dns_label(63)]
