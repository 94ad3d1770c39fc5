"""One configuration file for every way of running: TOML, with profiles, validated up front.

A file holds the base settings plus ``[profiles.<name>]`` tables that override them
(``local``, ``cluster``, ``databricks`` are conventional names, any name works). The
effective settings are: built-in defaults < file base < selected profile < command-line
overrides. Every problem is collected and reported at once, naming the file and the key,
before anything runs. Secrets never live in the file: only the *names* of environment
variables that hold them (``password_env``), so they stay off command lines and out of logs.
Every option, its default and the values it takes are declared once, in
`dlq_pipeline.config.options`.
"""

from __future__ import annotations

import copy
import difflib
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dlq_pipeline.config.options import OPTIONS, QMGR_KEYS
from dlq_pipeline.errors import ConfigError

PROFILE_ENV = "DLQ_PIPELINE_PROFILE"
SECRET_WORDS = ("password", "passwd", "secret", "token")


@dataclass(frozen=True)
class Config:
    """Validated settings: ``config.section["key"]`` style access via ``get``."""

    values: Mapping[str, Mapping[str, Any]]
    source: str = "<defaults>"
    profile: str = ""
    given: frozenset[str] = frozenset()  # "section.key" of each option a file, profile or override set

    def is_given(self, section: str, key: str) -> bool:
        """Whether the option was set (to any value, its default too) rather than defaulted."""
        return f"{section}.{key}" in self.given

    def get(self, section: str, key: str) -> Any:
        return self.values[section][key]

    def section(self, section: str) -> Mapping[str, Any]:
        return self.values[section]


def defaults() -> dict[str, dict[str, Any]]:
    """Every option's built-in default (`dlq_pipeline.config.options`), section by section."""
    return {s: {k: copy.deepcopy(option.default) for k, option in keys.items()} for s, keys in OPTIONS.items()}


def _did_you_mean(word: str, choices) -> str:
    near = difflib.get_close_matches(word, list(choices), n=1)
    return f" (did you mean '{near[0]}'?)" if near else ""


def _check_section(where: str, section: str, table: Any, problems: list[str]) -> dict[str, Any]:
    if not isinstance(table, dict):
        problems.append(f"{where}: [{section}] must be a table")
        return {}
    known = OPTIONS[section]
    clean: dict[str, Any] = {}
    for key, value in table.items():
        if key not in known:
            problems.append(f"{where}: unknown key '{section}.{key}'{_did_you_mean(key, known)}")
            continue
        problem = known[key].type_problem(value)
        if problem:
            problems.append(f"{where}: {problem}")
            continue
        clean[key] = value
    return clean


def _check_values(where: str, values: dict[str, dict[str, Any]], problems: list[str]) -> None:
    """Checks that need more than a type: each option's choices, range or own check, then
    those that take more than one option, then the queue managers' tables."""
    for section, keys in OPTIONS.items():
        for key, option in keys.items():
            problem = option.value_problem(values[section][key])
            if problem:
                problems.append(f"{where}: {problem}")
    ingest = values["ingest"]
    if ingest["clean_source"] == "archive" and not ingest["archive_dir"]:
        problems.append(f"{where}: 'ingest.clean_source' = archive needs 'ingest.archive_dir'")
    for name, qm in values["mq"]["qmgrs"].items():
        if not isinstance(qm, dict):
            problems.append(f"{where}: 'mq.qmgrs.{name}' must be a table")
            continue
        for key, value in qm.items():
            if key not in QMGR_KEYS:
                hint = ""
                if any(w in key.lower() for w in SECRET_WORDS):
                    hint = " (secrets never go in the file: name an environment variable with 'password_env')"
                problems.append(f"{where}: unknown key 'mq.qmgrs.{name}.{key}'{hint or _did_you_mean(key, QMGR_KEYS)}")
            elif not isinstance(value, QMGR_KEYS[key][0]):
                problems.append(f"{where}: 'mq.qmgrs.{name}.{key}' must be a string")
        problems.extend(f"{where}: {p}" for p in qmgr_problems(name, qm))


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
_CIPHER_SPEC = re.compile(r"[A-Z0-9_]{4,64}")
# CipherSpecs MQ deprecated as insecure (SSL 3.0, NULL, export, RC4, single/triple DES).
_WEAK_CIPHER = re.compile(r"^SSL_|NULL|EXPORT|RC4|_DES_|3DES|DES_SHA")


def qmgr_problems(name: str, qm: Mapping[str, Any]) -> list[str]:
    """What is inconsistent in one ``[mq.qmgrs.NAME]`` table (TLS, secrets). (A missing
    channel or conn_name is reported when the table is used, before any task starts.)

    Values of ``*_env`` keys are never repeated in a message: someone may have pasted the
    password itself there."""
    problems = []
    where = f"mq.qmgrs.{name}"
    text = {k: v for k, v in qm.items() if k in QMGR_KEYS and isinstance(v, str)}
    for key in ("password_env", "key_stash_password_env"):
        if key in text and not _ENV_NAME.fullmatch(text[key]):
            problems.append(
                f"'{where}.{key}' must be the NAME of an environment variable (letters, digits, _), "
                "not the secret itself; the value is not shown"
            )
    if text.get("user") and not text.get("password_env"):
        problems.append(f"'{where}' names a user but no password_env (the variable that holds the password)")
    if text.get("password_env") and not text.get("user"):
        problems.append(f"'{where}.password_env' is set but no user: the password would not be sent")
    cipher, keys = text.get("cipher_spec", ""), text.get("key_repository", "")
    if cipher and not keys:
        problems.append(f"'{where}.cipher_spec' needs key_repository (the TLS key repository stem) too")
    if keys and not cipher:
        problems.append(f"'{where}.key_repository' is set but no cipher_spec: the channel would not use TLS")
    if cipher and not _CIPHER_SPEC.fullmatch(cipher):
        problems.append(
            f"'{where}.cipher_spec' {cipher!r} is not a CipherSpec name "
            "(e.g. ANY_TLS13_OR_HIGHER, TLS_AES_256_GCM_SHA384)"
        )
    elif cipher and _WEAK_CIPHER.search(cipher):
        problems.append(
            f"'{where}.cipher_spec' {cipher} is deprecated as insecure: use ANY_TLS13_OR_HIGHER, "
            "ANY_TLS12_OR_HIGHER or a TLS 1.2/1.3 CipherSpec"
        )
    if keys.endswith((".kdb", ".p12", ".sth")):
        problems.append(
            f"'{where}.key_repository' is the stem without the extension (e.g. /var/mqm/ssl/client for client.kdb)"
        )
    if text.get("key_stash_password_env") and not keys:
        problems.append(f"'{where}.key_stash_password_env' is set but no key_repository")
    return problems


def _merge(values: dict[str, dict[str, Any]], layer: Mapping[str, Mapping[str, Any]], given: set[str]) -> None:
    for section, table in layer.items():
        values[section].update(table)
        given.update(f"{section}.{key}" for key in table)


def _parse_layer(where: str, doc: Mapping[str, Any], problems: list[str]) -> dict[str, dict[str, Any]]:
    layer: dict[str, dict[str, Any]] = {}
    for section, table in doc.items():
        if section == "profiles":
            continue
        if section not in OPTIONS:
            problems.append(f"{where}: unknown section [{section}]{_did_you_mean(section, OPTIONS)}")
            continue
        layer[section] = _check_section(where, section, table, problems)
    return layer


def load_config(
    path: str | os.PathLike | None = None,
    *,
    profile: str | None = None,
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
) -> Config:
    """Read, merge and validate; raises ConfigError listing every problem."""
    problems: list[str] = []
    values = defaults()
    given: set[str] = set()
    where = str(path) if path else "<defaults>"
    profile = profile if profile is not None else os.environ.get(PROFILE_ENV, "")
    if path is not None:
        try:
            doc = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigError([f"{where}: no such configuration file"]) from None
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError([f"{where}: not valid TOML: {exc}"]) from None
        _merge(values, _parse_layer(where, doc, problems), given)
        profiles = doc.get("profiles", {})
        if not isinstance(profiles, dict):
            problems.append(f"{where}: [profiles] must hold tables like [profiles.local]")
            profiles = {}
        if profile:
            if profile not in profiles:
                problems.append(
                    f"{where}: no profile '{profile}' (profiles here: {', '.join(sorted(profiles)) or 'none'})"
                )
            else:
                _merge(values, _parse_layer(f"{where} [profiles.{profile}]", profiles[profile], problems), given)
    elif profile:
        problems.append(f"profile '{profile}' selected but no configuration file given")
    if overrides:
        _merge(values, _parse_layer("command line", overrides, problems), given)
    _check_values(where, values, problems)
    if problems:
        raise ConfigError(problems)
    return Config(values=values, source=where, profile=profile or "", given=frozenset(given))
