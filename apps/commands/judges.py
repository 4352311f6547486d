"""Start or stop the local llama-server judges (SmolLM2-135M-Instruct and Gemma 3 270M).

  accord judges serve [--port N] [--parallel 4] [--json]   start both models, print the base URL
  accord judges stop                                         end the server this checkout started

The server runs in the background (pid in .run/llama-server.pid); the `local` judge
provider finds it through .run/llama-server.json. Build it first with
`bash scripts/llama_server.sh install`.
"""

from __future__ import annotations

import argparse
import json


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", required=True, metavar="{serve,stop}")
    serve = sub.add_parser("serve", help="start llama-server with both local models")
    serve.add_argument("--port", type=int, help="port on 127.0.0.1 (default: a free one)")
    serve.add_argument("--parallel", type=int, default=4, help="concurrent slots per model (default 4)")
    serve.add_argument("--ctx-size", type=int, default=8192, help="context per model, shared by its slots (default 8192)")
    serve.add_argument("--threads", type=int, default=1, help="CPU threads per model (default 1)")
    stop = sub.add_parser("stop", help="stop the server")
    for p in (serve, stop):
        p.add_argument("--name", default="llama-server",
                       help="instance name: .run/NAME.pid and .run/NAME.json (default llama-server, what `local` judges use)")
        p.add_argument("--json", action="store_true", help="machine-readable output")


def run(args: argparse.Namespace) -> int:
    from judges import LlamaServer, stop_named

    if args.action == "stop":
        stopped = stop_named(args.name)
        print(json.dumps({"stopped": stopped}) if args.json else (f"{args.name} stopped" if stopped else f"no {args.name} was running"))
        return 0
    server = LlamaServer(name=args.name, port=args.port, parallel=args.parallel, ctx_size=args.ctx_size, threads=args.threads).start()
    info = {"base_url": server.base_url, "pid": server.process.pid, "models": list(server.MODELS)}
    if args.json:
        print(json.dumps(info))
    else:
        print(f"llama-server on {server.base_url} (pid {info['pid']}) serving {', '.join(info['models'])}; "
              "stop with `accord judges stop`")
    return 0
