"""Secrets read from the environment, by the name of the variable a setting gives: a password
never sits in a configuration file, on a command line or in a log."""

from __future__ import annotations

import os

from dlq_pipeline.errors import ConfigError


def secret(env_name: str, where: str) -> str:
    """The value of the secret in environment variable ``env_name``, which the setting
    ``where`` (e.g. ``mq.qmgrs.QM1.password_env``) names.

    The error names the setting, never ``env_name``: a password pasted into ``password_env``
    passes as a variable name when it is made of letters, digits and ``_``."""
    value = os.environ.get(env_name)
    if value is None:
        raise ConfigError(
            [
                f"the environment variable that '{where}' names is not set (its name is not "
                "shown, in case a password was put there by mistake)"
            ]
        )
    return value
