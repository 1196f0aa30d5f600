"""The checked-in type stub ``kavka/protocol/messages.pyi`` is what
``python -m kavka.protocol.stubgen`` writes from the schema table, and it
describes the classes ``kavka.protocol.messages`` builds at run time: the
same classes, fields in the same order, the same keyword-only constructor
parameters, and every value a default instance or a decoder produces fits
its field's annotation."""

from __future__ import annotations

import ast
import difflib
import inspect
import uuid

from hypothesis import given
from hypothesis import strategies as st

from kavka.protocol import messages
from kavka.protocol.codec import decode_body, encode_body
from kavka.protocol.message_base import Message
from kavka.protocol.schema import registry
from kavka.protocol.stubgen import COMMAND, STUB_PATH, main, render
from schema_strategies import all_versions, budget, case_id, message

STUB = ast.parse(STUB_PATH.read_text())
# Names messages.py imports for its own use, not part of its interface.
PRIVATE_IMPORTS = {"annotations", "cache", "registry", "Api"}


def test_stub_is_what_the_generator_writes():
    expected = render()
    actual = STUB_PATH.read_text()
    if actual != expected:
        diff = "".join(difflib.unified_diff(actual.splitlines(True), expected.splitlines(True),
                                            "messages.pyi (checked in)", "messages.pyi (generated)", n=1))
        lines = diff.splitlines()
        raise AssertionError(f"{STUB_PATH} is stale: run `{COMMAND}` and commit the result\n"
                             + "\n".join(lines[:40]) + ("\n..." if len(lines) > 40 else ""))


def test_check_option_reports_a_stale_stub(tmp_path, capsys):
    stale = tmp_path / "messages.pyi"
    stale.write_text(render().replace("acks: int", "acks: str", 1))
    assert main(["--check", "-o", str(stale)]) == 1
    assert COMMAND in capsys.readouterr().err
    main(["-o", str(stale)])
    assert main(["--check", "-o", str(stale)]) == 0


def _classes(body: list[ast.stmt]) -> dict[str, ast.ClassDef]:
    return {n.name: n for n in body if isinstance(n, ast.ClassDef)}


def test_stub_names_every_public_name_of_messages():
    stub_names = set(_classes(STUB.body))
    for node in STUB.body:
        if isinstance(node, ast.FunctionDef):
            stub_names.add(node.name)
        elif isinstance(node, ast.ImportFrom):
            stub_names.update(a.asname or a.name for a in node.names)
    runtime = {f"{a.name}{side}" for a in registry().values() for side in ("Request", "Response")}
    runtime |= {n for n in dir(messages) if not n.startswith("_")} - PRIVATE_IMPORTS
    assert sorted(runtime - stub_names) == []
    assert sorted(stub_names - runtime - {"uuid"}) == []


def _check_class(cls: type, node: ast.ClassDef) -> None:
    fields = [n.target.id for n in node.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)]
    assert tuple(fields) == cls.FIELDS, cls.__qualname__
    init = next(n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__")
    stub_params = [a.arg for a in init.args.kwonlyargs]
    runtime_params = list(inspect.signature(cls).parameters)
    assert stub_params == runtime_params, cls.__qualname__
    assert all(p.kind is p.KEYWORD_ONLY for p in inspect.signature(cls).parameters.values())
    nested = _classes(node.body)
    runtime_nested = {n: v for n, v in vars(cls).items() if isinstance(v, type) and issubclass(v, Message)}
    assert sorted(nested) == sorted(runtime_nested), cls.__qualname__
    for name, child in nested.items():
        _check_class(runtime_nested[name], child)


def test_stub_classes_match_the_runtime_classes():
    top = _classes(STUB.body)
    for a in registry().values():
        for side in ("Request", "Response"):
            name = f"{a.name}{side}"
            cls = getattr(messages, name)
            assert a.key == cls.API_KEY
            _check_class(cls, top[name])


# -- values against annotations --------------------------------------------

def _annotations(node: ast.ClassDef) -> dict[str, str]:
    return {n.target.id: ast.unparse(n.annotation) for n in node.body
            if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}


def _split_union(annotation: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, c in enumerate(annotation):
        depth += c == "["
        depth -= c == "]"
        if c == "|" and depth == 0:
            parts.append(annotation[start:i].strip())
            start = i + 1
    return parts + [annotation[start:].strip()]


_SIMPLE = {"int": int, "bool": bool, "float": float, "str": str, "bytes": bytes,
           "memoryview": memoryview, "uuid.UUID": uuid.UUID, "None": type(None)}


def _fits(value: object, annotation: str) -> bool:
    for option in _split_union(annotation):
        if option.startswith("list[") and option.endswith("]"):
            if isinstance(value, list) and all(_fits(v, option[5:-1]) for v in value):
                return True
        elif option in _SIMPLE:
            # bool is an int subclass: an int field never holds a bool, nor the reverse
            if type(value) is _SIMPLE[option] or (option == "uuid.UUID" and isinstance(value, uuid.UUID)):
                return True
        else:
            cls: object = messages
            for part in option.split("."):
                cls = getattr(cls, part)
            if type(value) is cls:
                return True
    return False


def _check_values(msg: Message, node: ast.ClassDef, where: str) -> None:
    nested = _classes(node.body)
    for name, annotation in _annotations(node).items():
        value = getattr(msg, name)
        assert _fits(value, annotation), f"{where}.{name} = {value!r} does not fit {annotation}"
        elements = value if isinstance(value, list) else [value]
        for i, v in enumerate(elements):
            if isinstance(v, Message):
                _check_values(v, nested[type(v).__name__], f"{where}.{name}[{i}]")


def test_default_instances_fit_the_annotations():
    top = _classes(STUB.body)
    for a in registry().values():
        for side in ("Request", "Response"):
            name = f"{a.name}{side}"
            msg = getattr(messages, name)()
            _check_values(msg, top[name], name)
            for child_name, child in _classes(top[name].body).items():
                _check_values(getattr(type(msg), child_name)(), child, f"{name}.{child_name}")


CASES = all_versions()


@budget(4)
@given(st.sampled_from(CASES).flatmap(lambda case: st.tuples(st.just(case), message(*case))))
def test_decoded_messages_fit_the_annotations(drawn):
    (api_key, side, version), msg = drawn
    decoded = decode_body(api_key, side, version, memoryview(encode_body(msg, version)))
    _check_values(decoded, _classes(STUB.body)[type(decoded).__name__], case_id((api_key, side, version)))
