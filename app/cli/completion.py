"""`wlmap completion bash|zsh|fish`: shell completion scripts generated from the argparse parser,
so a new flag completes without anyone editing a script.  (shtab does bash and zsh but not fish;
one generator keeps the three alike.)  Completes subcommands, flags, the values of flags with
choices (-o table|wide|…), and file names where a command takes files."""

from __future__ import annotations

import argparse
import shlex
from dataclasses import dataclass, field

FILE_FLAGS = {"--kubeconfig", "--definition", "--pods", "--definitions"}  # flags whose value is a path
FILE_ARGS = {"files", "file", "dir"}  # positionals that are paths (fit, update: one FILE)


@dataclass
class Command:
    path: tuple[str, ...]
    help: str = ""
    subcommands: list[Command] = field(default_factory=list)
    flags: list[tuple[list[str], bool, list[str], str]] = field(
        default_factory=list
    )  # names, takes value, choices, help
    words: list[str] = field(default_factory=list)  # choices of positionals
    files: bool = False


def commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = (), help: str = "") -> list[Command]:
    """Every command of the parser, depth first, the root first."""
    cmd = Command(path, help)
    below: list[Command] = []
    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction):
            helps = {c.dest: c.help or "" for c in a._choices_actions}
            for name, sub in a.choices.items():
                found = commands(sub, (*path, name), helps.get(name, ""))
                cmd.subcommands.append(found[0])
                below += found
        elif a.option_strings:
            cmd.flags.append(
                (
                    list(a.option_strings),
                    a.nargs != 0,
                    [str(c) for c in a.choices or []],
                    "" if a.help == argparse.SUPPRESS else (a.help or ""),
                )
            )
        else:
            cmd.words += [str(c) for c in a.choices or []]
            cmd.files = cmd.files or a.dest in FILE_ARGS
    return [cmd, *below]


def _key(path: tuple[str, ...]) -> str:
    return "".join(" " + p for p in path)


def bash(parser: argparse.ArgumentParser, prog: str = "wlmap") -> str:
    cmds = commands(parser)
    fn = "_" + prog.replace("-", "_")
    valued = sorted({n for c in cmds for names, takes, _, _ in c.flags if takes for n in names})
    subs = sorted(_key(s.path) for c in cmds for s in c.subcommands)
    out = [
        f"# {prog} completion for bash (and zsh through bashcompinit): source <({prog} completion bash)",
        f"{fn}() {{",
        '    local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}" path="" w i words="" flags=""',
        "    for ((i = 1; i < COMP_CWORD; i++)); do",
        '        w="${COMP_WORDS[i]}"',
        '        case "$w" in',
        f"            {'|'.join(valued)}) ((i++)); continue ;;",
        "        esac",
        '        case "$path $w" in',
        f'            {"|".join(shlex.quote(s) for s in subs)}) path="$path $w" ;;',
        "        esac",
        "    done",
        '    case "$path:$prev" in',
    ]
    for c in cmds:
        for names, takes, choices, _ in c.flags:
            if not takes:
                continue
            pats = "|".join(shlex.quote(f"{_key(c.path)}:{n}") for n in names)
            if choices:
                out.append(
                    f'        {pats}) COMPREPLY=($(compgen -W {shlex.quote(" ".join(choices))} -- "$cur")); return ;;'
                )
            elif set(names) & FILE_FLAGS:
                out.append(f'        {pats}) COMPREPLY=($(compgen -f -- "$cur")); return ;;')
            else:
                out.append(f"        {pats}) COMPREPLY=(); return ;;")
    out += ["    esac", '    case "$path" in']
    for c in cmds:
        words = [s.path[-1] for s in c.subcommands] + c.words
        flags = [n for names, *_ in c.flags for n in names]
        out.append(
            f"        {shlex.quote(_key(c.path))}) words={shlex.quote(' '.join(words))} "
            f"flags={shlex.quote(' '.join(flags))}"
            + ('; [[ $cur != -* ]] && COMPREPLY=($(compgen -f -- "$cur"))' if c.files else "")
            + " ;;"
        )
    out += [
        "    esac",
        "    [[ $cur == -* ]] && words=$flags  # flags once a dash is typed, as kubectl",
        '    COMPREPLY+=($(compgen -W "$words" -- "$cur"))',
        "}",
        f"complete -o filenames -F {fn} {prog}",
    ]
    return "\n".join(out) + "\n"


def zsh(parser: argparse.ArgumentParser, prog: str = "wlmap") -> str:
    """zsh runs the bash function through its bashcompinit layer."""
    return (
        f"#compdef {prog}\n# {prog} completion for zsh: source <({prog} completion zsh)\n"
        "autoload -U +X compinit && compinit\nautoload -U +X bashcompinit && bashcompinit\n" + bash(parser, prog)
    )


def _fish_quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def fish(parser: argparse.ArgumentParser, prog: str = "wlmap") -> str:
    cmds = commands(parser)
    out = [f"# {prog} completion for fish: {prog} completion fish | source", f"complete -c {prog} -f"]

    def at(path: tuple[str, ...], subs: list[Command]) -> str:
        """The fish condition 'the command line is at this command' (and no subcommand of it yet)."""
        if not path:
            return "__fish_use_subcommand"
        cond = "; and ".join(f"__fish_seen_subcommand_from {p}" for p in path)
        if subs:
            cond += "; and not __fish_seen_subcommand_from " + " ".join(s.path[-1] for s in subs)
        return cond

    for c in cmds:
        cond = _fish_quote(at(c.path, c.subcommands))
        for s in c.subcommands:
            out.append(f"complete -c {prog} -n {cond} -a {s.path[-1]} -d {_fish_quote(s.help)}")
        if c.words:
            out.append(f"complete -c {prog} -n {cond} -a {_fish_quote(' '.join(c.words))}")
        if c.files:
            out.append(f"complete -c {prog} -n {cond} -F")
        for names, takes, choices, help in c.flags:
            spec = " ".join(f"-l {n[2:]}" if n.startswith("--") else f"-s {n[1:]}" for n in names)
            if takes:
                spec += (
                    f" -x -a {_fish_quote(' '.join(choices))}"
                    if choices
                    else (" -r -F" if set(names) & FILE_FLAGS else " -x")
                )
            out.append(f"complete -c {prog} -n {cond} {spec} -d {_fish_quote(help.split('. ')[0][:80])}")
    return "\n".join(out) + "\n"


SHELLS = {"bash": bash, "zsh": zsh, "fish": fish}
