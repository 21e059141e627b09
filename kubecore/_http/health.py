"""``/healthz``: the kubelet's health checks (``ping``, ``syncloop``, ``runtime``, one ``source
<name>`` per pod source): 200 ``ok`` (``?verbose`` lists each check), or 500 listing each check
with ``[+]``/``[-]`` and why a failing one fails; ``/healthz/<check>`` runs one check."""

from __future__ import annotations

import urllib.parse
from http import HTTPStatus

from kubecore._apimachinery.rules import HTTPError
from kubecore._http.handler import TEXT_TYPE, Handler


def health_check_text(name: str, problem: str) -> tuple[bool, str]:
    """One check's answer (``/healthz/<name>``), as the kubelet gives it."""
    if not problem:
        return True, "ok\n"
    return False, f"internal server error: {name} {_one_line(problem)}\n"


def healthz_text(checks: list[tuple[str, str]], *, verbose: bool) -> tuple[bool, str]:
    """``/healthz``: ``ok``, or one ``[+]``/``[-]`` line per check (always when one fails),
    and unlike the kubelet, which withholds it, the reason of each failing check."""
    ok = not any(problem for _, problem in checks)
    if ok and not verbose:
        return True, "ok\n"
    lines = [
        f"[-]{name} {_one_line(problem)}" if problem else f"[+]{name} ok"
        for name, problem in checks
    ]
    lines.append("healthz check passed" if ok else "healthz check failed")
    return ok, "\n".join(lines) + "\n"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def healthz(handler: Handler, rest: list[str], query: dict[str, list[str]]) -> None:
    try:
        checks = handler.server.kubelet.views.health_checks()
    except Exception as error:
        checks = [("healthz", f"failed: {error}")]
    if rest and rest != [""]:
        name = urllib.parse.unquote("/".join(rest))
        found = [problem for check, problem in checks if check == name]
        if not found:
            raise HTTPError(HTTPStatus.NOT_FOUND, f"no health check {name!r}")
        ok, text = health_check_text(name, found[0])
    else:
        ok, text = healthz_text(checks, verbose="verbose" in query)
    code = HTTPStatus.OK if ok else HTTPStatus.INTERNAL_SERVER_ERROR
    handler._send_bytes(code, text.encode(), TEXT_TYPE)
