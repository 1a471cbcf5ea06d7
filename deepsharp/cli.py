"""The `deepsharp` command: `deepsharp demo | inspect | check ...`.

Each sub-command lives in the module that owns its subject and is imported only when
called, so `deepsharp demo` never pays for the ONNX tooling and the reverse.
"""

from __future__ import annotations

import importlib
import sys

# name -> "module:function"; each function takes argv (list[str]) and returns an exit status.
COMMANDS: dict[str, tuple[str, str]] = {
    "demo": ("deepsharp.demo:main", "train on the bundled data, export to ONNX, check in ONNX Runtime"),
    "inspect": ("deepsharp_export_onnx.commands:inspect_main", "print an ONNX file's inputs, outputs, opset, nodes"),
    "check": ("deepsharp_export_onnx.commands:check_main", "run an ONNX file and check its shape annotations"),
}


def _usage() -> str:
    lines = ["usage: deepsharp <command> [options]", "", "commands:"]
    lines += [f"  {name:<8} {about}" for name, (_, about) in COMMANDS.items()]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in {"-h", "--help"}:
        print(_usage())
        return 0 if argv else 2
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        print(f"deepsharp: unknown command {name!r}; known: {', '.join(COMMANDS)}", file=sys.stderr)
        return 2
    module_name, function_name = COMMANDS[name][0].split(":")
    function = getattr(importlib.import_module(module_name), function_name)
    return int(function(rest) or 0)
