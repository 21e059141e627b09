"""``kubecore plan``: what ``kubecore run`` would do to the node now, pod by pod, doing none of it;
and ``kubecore why``: why a pod of a running agent is where it is (its ``/why`` endpoint).

``plan`` reads the manifests, lists the runtime once and runs admission and the planner the sync
runs (``kubecore._agent.plan.plan_fresh``: what a new agent's first pass would do, as
``run --once``). It writes nothing and takes no lock: when an agent holds the root directory it
says so on stderr and reads all the same. Exit status as ``terraform plan -detailed-exitcode``:
0 nothing would change, 2 something would, 1 an error (a usage error too)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping
from typing import IO, Any

from kubecore._cli.basic import UsageError
from kubecore._plugins.commands import EXIT_FAILED, EXIT_OK

EXIT_CHANGES = 2
"""``plan``: a sync would change something."""

_PLAN_FLAGS = ("runtime", "root_dir", "node_name", "runtime_option", "max_pods")


def add_plan_commands(commands: Any) -> None:
    plan = commands.add_parser(
        "plan",
        help="print what the agent would do to the node now, doing none of it",
        description=(
            "Read the manifests and one snapshot of the runtime, run admission and the planner "
            "the agent's sync runs, and print what a sync would do, pod by pod, with why. "
            "Nothing is executed. Exits 0 when nothing would change, 2 when something would, "
            "1 on an error."
        ),
    )
    plan.add_argument("sources", nargs="+", metavar="SOURCE", help="manifest files or directories")
    plan.add_argument("--runtime", default=argparse.SUPPRESS, help="the runtime plugin")
    plan.add_argument("--root-dir", dest="root_dir", default=argparse.SUPPRESS, metavar="DIR")
    plan.add_argument("--node-name", dest="node_name", default=argparse.SUPPRESS, metavar="NAME")
    plan.add_argument(
        "--runtime-option",
        dest="runtime_option",
        action="append",
        default=argparse.SUPPRESS,
        metavar="KEY=VALUE",
        help="an option for the runtime plugin (repeatable)",
    )
    plan.add_argument("--max-pods", dest="max_pods", type=int, default=argparse.SUPPRESS)
    plan.add_argument("-o", "--output", choices=("table", "json", "yaml"), default="table")
    plan.set_defaults(handler=cmd_plan)

    why = commands.add_parser(
        "why",
        help="ask a running agent why a pod is where it is",
        description=(
            "Ask a running agent (its HTTP API, /why/NAMESPACE/POD) for the pod's conditions "
            "and, for each container that is not ready, the one reason that holds it back now, "
            "with the evidence."
        ),
    )
    why.add_argument("pod", metavar="NAMESPACE/POD")
    why.add_argument(
        "--server",
        default=os.environ.get("KUBECORE_SERVER", "http://127.0.0.1:10250"),
        help="the agent's address (default: $KUBECORE_SERVER or http://127.0.0.1:10250)",
    )
    why.add_argument("--token-file", default="", metavar="FILE", help="a bearer token's file")
    why.add_argument("--insecure", action="store_true", help="do not verify the TLS certificate")
    why.add_argument("-o", "--output", choices=("text", "json"), default="text")
    why.set_defaults(handler=cmd_why)


def cmd_plan(
    args: argparse.Namespace, out: IO[str], environ: Mapping[str, str] | None = None
) -> int:
    try:
        return _plan(args, out, os.environ if environ is None else environ)
    except UsageError as error:  # 2 would say "changes": a usage error is an error here
        sys.stderr.write(f"kubecore: {error}\n")
        return EXIT_FAILED


def _plan(args: argparse.Namespace, out: IO[str], environ: Mapping[str, str]) -> int:
    from kubecore._agent.plan import plan_fresh
    from kubecore._cli.commands import kubelet_config, load_runtime_bundle
    from kubecore._cli.settings import resolve_settings
    from kubecore._config.file import FileSource
    from kubecore._config.podconfig import PodConfig
    from kubecore._contract.errors import SourceUnavailable
    from kubecore._util.clock import SystemClock
    from kubecore._volumes.pod_dirs import root_dir_holder

    flags = {k: v for k, v in vars(args).items() if k in _PLAN_FLAGS}
    settings = resolve_settings(flags, environ, None)
    config = kubelet_config(settings)
    holder = root_dir_holder(config.root_dir)
    if holder is not None:
        sys.stderr.write(
            f"kubecore: an agent holds {config.root_dir} ({holder}): planning without its "
            "lock, from what it left on the runtime (its back-offs and probe results are its "
            "own: `kubecore why` asks it)\n"
        )
    try:
        source = FileSource(args.sources, settle=0, watch=False)
    except SourceUnavailable as error:
        raise UsageError(str(error)) from None
    update = source.refresh()
    problems = source.problems
    for problem in problems:
        sys.stderr.write(f"kubecore: {problem}\n")
    if problems:
        return EXIT_FAILED
    pod_config = PodConfig(node_name=config.node_name)
    if update is not None:
        pod_config.apply(update)
    bundle = load_runtime_bundle(settings["runtime"], settings["runtime_option"], True, sys.stderr)
    try:
        plan = plan_fresh(
            bundle.runtime,
            bundle.puller,
            config,
            pod_config.pods(),
            sources_ready=pod_config.sources_ready(),
            now=(bundle.agent_clock(None) or SystemClock()).now(),
        )
    finally:
        bundle.runtime.close()
    document = plan.as_dict()
    if args.output == "json":
        out.write(json.dumps(document, indent=2) + "\n")
    elif args.output == "yaml":
        import yaml

        out.write(yaml.safe_dump(document, sort_keys=False))
    else:
        out.write(plan_table(document))
    return EXIT_CHANGES if plan.changes else EXIT_OK


def plan_table(document: Mapping[str, Any]) -> str:
    """``POD ACTION CONTAINER REASON``, a row per step, then how many pods would change."""
    rows = [["POD", "ACTION", "CONTAINER", "REASON"]]
    for pod in document["pods"]:
        name = f"{pod['namespace']}/{pod['name']}"
        for step in pod["steps"]:
            reason = step.get("reason", "")
            if "until" in step:
                reason += f" (next try {step['until']})"
            rows.append([name, step["action"], step.get("container", "-"), reason])
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = ["  ".join([*(r[i].ljust(widths[i]) for i in range(3)), r[3]]).rstrip() for r in rows]
    changing = sum(1 for pod in document["pods"] if pod["changes"])
    total = len(document["pods"])
    lines.append(f"\n{changing} of {total} pod(s) would change.")
    return "\n".join(lines) + "\n"


def cmd_why(args: argparse.Namespace, out: IO[str]) -> int:
    namespace, _, name = args.pod.partition("/")
    if not namespace or not name or "/" in name:
        raise UsageError(f"{args.pod!r}: name the pod as NAMESPACE/POD")
    from urllib.parse import quote

    path = f"/why/{quote(namespace)}/{quote(name)}"
    document = fetch_json(args.server.rstrip("/") + path, args.token_file, args.insecure)
    if args.output == "json":
        out.write(json.dumps(document, indent=2) + "\n")
    else:
        from kubecore._agent.explain import explanation_text

        out.write(explanation_text(document))
    return EXIT_OK


def fetch_json(url: str, token_file: str, insecure: bool) -> Any:
    import urllib.error
    import urllib.request

    """GET ``url`` as JSON; an error's v1 ``Status`` message raised as an ``OSError``."""
    headers = {"Accept": "application/json"}
    if token_file:
        with open(token_file, encoding="utf-8") as token:
            headers["Authorization"] = f"Bearer {token.read().strip()}"
    context = None
    if insecure and url.startswith("https:"):
        import ssl

        context = ssl._create_unverified_context()
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30, context=context) as response:
            return json.load(response)
    except urllib.error.HTTPError as error:
        try:
            message = json.load(error).get("message", "")
        except ValueError:
            message = ""
        raise OSError(f"{url}: {error.code} {message or error.reason}") from None
    except urllib.error.URLError as error:
        raise OSError(f"{url}: {error.reason}") from None
