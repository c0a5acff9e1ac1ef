"""The `wlmap serve` flags, derived from the settings' declaration (settings.py): one per
setting, its help naming the variable and the default; --accelerator-resource/--gpu-resource are
shared with every command that interprets."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from ..engine import accelerators
from .settings import OPTS, MiB, Settings, SettingsError, env_value, kind


def _bool(v: str) -> bool:
    if v.lower() in ("1", "true", "yes", "on"):
        return True
    if v.lower() in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {v!r}")


def shown_default(name: str) -> str | None:
    """A field's default as help and docs say it (None: no default)."""
    o, v = OPTS[name], Settings.model_fields[name].default
    if o.default_text is not None:
        return o.default_text
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, list):
        return ",".join(v) or None
    if isinstance(v, int) and v >= MiB and v % MiB == 0:
        return f"{v} ({v // MiB} MiB)"
    return None if v is None else str(v)


def _help(name: str) -> str:
    o, default = OPTS[name], shown_default(name)
    env = o.env if kind(name) is not list else f"{o.env}, {'path' if o.sep == os.pathsep else 'comma'}-separated"
    return f"{o.help} ({env}" + (f"; default {default})" if default else ")")


def _add(p: argparse.ArgumentParser, name: str, **kw: Any) -> None:
    o, k = OPTS[name], kind(name)
    kw = {"dest": name, "default": argparse.SUPPRESS, "metavar": o.metavar, "help": _help(name), **kw}
    if k is list:
        kw["action"] = "append"
    elif k is bool:
        kw.update(type=_bool, metavar="true|false")
    elif isinstance(k, tuple):
        kw["choices"] = list(k)
    elif k in (int, float):
        kw["type"] = k
    p.add_argument(str(o.flag), **kw)


def add_serve_arguments(p: argparse.ArgumentParser) -> None:
    """The flags of `wlmap serve`: one per setting (a flag not given leaves the variable's value,
    else the default)."""
    for name, o in OPTS.items():
        if o.flag and o.serve:
            _add(p, name)


def settings_from_args(args: argparse.Namespace) -> Settings:
    """The flags given over WLMAP_* over the defaults.  A repeatable serve flag adds to its
    variable's list; --accelerator-resource/--gpu-resource replace theirs."""
    given = {name: v for name in OPTS if (v := getattr(args, name, None)) is not None}
    for name, v in given.items():
        if isinstance(v, list) and OPTS[name].serve:
            given[name] = [*(env_value(name, OPTS[name]) or []), *v]
    if getattr(args, "definition", None):  # `--definition`, which every command takes
        given["definitions"] = [
            *given.get("definitions", env_value("definitions", OPTS["definitions"]) or []),
            *args.definition,
        ]
    try:
        return Settings.from_env(**given)
    except ValidationError as e:
        raise _refusal(e, set(given)) from None


def _refusal(e: ValidationError, given: set[str]) -> SettingsError:
    """The first bad value, named by its flag (by its variable when no flag gave it)."""
    err = e.errors()[0]
    name = str(err["loc"][0]) if err["loc"] else ""
    if "error" in (err.get("ctx") or {}) or name not in OPTS:  # a check of ours: its message says it all
        return SettingsError(str((err.get("ctx") or {}).get("error", err["msg"])))
    o = OPTS[name]
    bounds = {
        k: getattr(m, k)
        for m in Settings.model_fields[name].metadata
        for k in ("ge", "le")
        if getattr(m, k, None) is not None
    }
    if err["type"] in ("greater_than_equal", "less_than_equal"):
        return SettingsError(
            f"{o.flag} takes {bounds['ge']} to {bounds['le']}"
            if "le" in bounds
            else f"{o.flag} takes at least {bounds['ge']}"
        )
    return SettingsError(f"{o.flag if name in given else o.env}: {err['msg']}")


def _resource_name(what: str) -> Callable[[str], str]:  # an argparse type
    def check(v: str) -> str:
        try:
            return accelerators.check_names([v], what)[0]
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None

    return check


def add_resource_arguments(p: argparse.ArgumentParser) -> None:
    """--accelerator-resource / --gpu-resource: every command that interprets takes them.  A flag
    given once or more replaces the list (from the environment, else the default)."""
    _add(p, "accelerator_resources", type=_resource_name("accelerator resource"))
    _add(p, "gpu_resources", type=_resource_name("GPU resource"))
    p.set_defaults(accelerator_resources=None, gpu_resources=None)


def configure_resources(args: argparse.Namespace) -> None:
    """Resolve the flags (else the environment, else the defaults) into args, and the engine
    options a command interprets with into `args.engine` (ValueError: a bad WLMAP_* value)."""
    from ..engine.options import engine_options

    for name in ("accelerator_resources", "gpu_resources"):
        given = getattr(args, name, None) or env_value(name, OPTS[name]) or Settings.model_fields[name].default
        setattr(args, name, list(given))
    args.engine = engine_options(args.accelerator_resources, args.gpu_resources)
