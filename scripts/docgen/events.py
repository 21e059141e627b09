"""The events reference: every reason of ``kubecore.events.EventReason``, in the groups and
with the notes its source gives them."""

from __future__ import annotations

import ast
import inspect
import io
import tokenize

from scripts.docgen.codescan import loaded
from scripts.docgen.markdown import code, table


def _comments(source: str) -> dict[int, str]:
    return {
        token.start[0]: token.string.lstrip("# ").strip()
        for token in tokenize.generate_tokens(io.StringIO(source).readline)
        if token.type == tokenize.COMMENT
    }


def render() -> str:
    from kubecore.events import EventReason

    source = inspect.getsource(loaded("kubecore._observability.events"))
    comments = _comments(source)
    (body,) = [
        node
        for node in ast.parse(source).body
        if isinstance(node, ast.ClassDef) and node.name == "EventReason"
    ]
    rows = []
    group = ""
    for statement in body.body:
        if not isinstance(statement, ast.Assign):
            continue
        line = statement.lineno
        for above in range(line - 1, 0, -1):  # a comment line alone above starts a group
            if above in comments and not source.splitlines()[above - 1].split("#")[0].strip():
                group = comments[above]
                break
            if source.splitlines()[above - 1].strip() and above not in comments:
                break
        (target,) = statement.targets
        assert isinstance(target, ast.Name)
        note = comments.get(line, "")
        rows.append(
            (code(EventReason[target.id].value), code(f"EventReason.{target.id}"), group, note)
        )
    doc = " ".join((EventReason.__doc__ or "").split()).replace("``", "`")
    return "\n".join(
        [doc, "", table(("reason", "name", "about", "upstream file, when not event.go"), rows)]
    )
