"""statesnap's Scala packages depend downward, in the order docs/design.md gives, with no cycle: read from the sources
of every minor (jvm/src/main), no Spark needed. A package's dependencies are the statesnap packages its code (not its
comments) names, and the statesnap classes in Spark's own packages it uses."""
from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "jvm" / "src" / "main"
SPARK_STATE = "org.apache.spark.sql.execution.streaming.state"
# Bottom first: a package may depend on those before it only (docs/design.md, "Packages").
LAYERS = ["io.statesnap", "io.statesnap.evolution", "io.statesnap.snapshot", "io.statesnap.meaning",
          "io.statesnap.registration", "io.statesnap.placement", "io.statesnap.keys", SPARK_STATE,
          SPARK_STATE + ".offline", "io.statesnap.provider", "io.statesnap.bridge", "io.statesnap.checkpoint",
          "io.statesnap.query", "io.statesnap.tools"]


def without_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r'"(?:[^"\\\n]|\\.)*"', '""', text)
    return re.sub(r"//.*$", "", text, flags=re.M)


def package_graph() -> dict[str, dict[str, set[str]]]:
    """package -> package it depends on -> the files (relative to jvm/src/main) where it does."""
    sources = {path: path.read_text() for path in ROOT.rglob("*.scala")}
    package_of = {path: re.search(r"^package ([\w.]+)", text, re.M).group(1) for path, text in sources.items()}
    defined: dict[str, set[str]] = {}
    for path, text in sources.items():
        defined.setdefault(package_of[path], set()).update(
            re.findall(r"^(?:(?:private\[\w+\]|final|sealed|abstract|case)\s+)*(?:class|object|trait)\s+(\w+)",
                       text, re.M))
    graph: dict[str, dict[str, set[str]]] = {}
    for path, text in sources.items():
        package, code = package_of[path], without_comments(text)
        uses = {f"io.statesnap.{p}" for p in re.findall(r"\bio\.statesnap\.([a-z]+)\b", code)}
        if re.search(r"\bio\.statesnap\.(?:\{|[A-Z])", code):
            uses.add("io.statesnap")
        body = re.sub(r"^import .*$", "", code, flags=re.M)
        for spark in (SPARK_STATE, SPARK_STATE + ".offline"):
            ours = defined.get(spark, set())
            imported = " ".join(re.findall(rf"^import {re.escape(spark)}\.(\{{[^}}]*\}}|\w+)", code, re.M))
            wildcard = re.search(rf"^import {re.escape(spark)}\._", code, re.M) or package.startswith(spark + ".")
            if set(re.findall(r"\w+", imported)) & ours or (wildcard and any(
                    re.search(rf"\b{name}\b", body) for name in ours)):
                uses.add(spark)
        for used in uses & set(defined) - {package}:
            graph.setdefault(package, {}).setdefault(used, set()).add(str(path.relative_to(ROOT)))
    return graph


def test_every_package_depends_only_on_packages_below_it():
    graph = package_graph()
    assert set(graph) | {p for deps in graph.values() for p in deps} <= set(LAYERS), \
        "a package docs/design.md does not place: add it to LAYERS and the design notes"
    upward = [f"{package} -> {used} ({', '.join(sorted(files))})" for package, deps in graph.items()
              for used, files in deps.items() if LAYERS.index(used) >= LAYERS.index(package)]
    assert not upward, "dependencies against the layers (each closes a cycle or would):\n" + "\n".join(upward)


def test_the_graph_sees_a_dependency_through_code_not_comments():
    """The reading itself: a real dependency is found, and one named in a comment only is not."""
    graph = package_graph()
    assert "scala/io/statesnap/provider/DeclaredSnapshots.scala" in graph["io.statesnap.provider"][
        "io.statesnap.registration"]
    assert "io.statesnap.bridge" not in graph["io.statesnap.provider"]  # StateDecision's Scaladoc links to bridge


# Where errors are built: each area's factory (`*Errors.scala`, with its error classes), the exception and its classes
# (StatesnapException.scala), the framing of an unreadable file around what is wrong inside it (CheckpointFile.scala)
# and the decision's refusal, which builds its own (StateDecision.Refuse.error: field-level problems, the schemas).
FACTORIES = {"StatesnapException.scala", "CheckpointFile.scala", "StateDecision.scala"}
# An error built anywhere else: statesnap's own, or a JVM exception carrying a message of its own.
INLINE_ERROR = re.compile(r"new (?:Statesnap|IllegalArgument|IllegalState|UnsupportedOperation|Runtime)Exception\(")


def inline_errors() -> list[str]:
    sources = [path for path in ROOT.rglob("*.scala") if path.name not in FACTORIES
               and not path.name.endswith("Errors.scala")]
    assert len(sources) > 150, f"the sources are not where this looks: {len(sources)}"
    return sorted(f"{path.relative_to(ROOT)}: {match.group(0)}" for path in sources
                  for match in INLINE_ERROR.finditer(without_comments(path.read_text())))


def test_errors_are_built_in_their_areas_factory():
    """Every error statesnap raises comes from the factory of its area, with its error class, as Spark's state
    store's come from StateStoreErrors (the stores' from provider.StoreErrors, a registration's from
    registration.RegistrationErrors, the verbs' from tools.ToolErrors, ...): a message written inline elsewhere drifts
    from the others and carries no class. A state statesnap's code rules out is StatesnapErrors.internal."""
    assert not inline_errors(), "errors built outside their area's factory:\n" + "\n".join(inline_errors())


def test_the_factory_rule_sees_an_inline_error(tmp_path, monkeypatch):
    """The reading itself: an inline throw planted in a copy of the sources is found."""
    copy = tmp_path / "main"
    shutil.copytree(ROOT, copy)
    planted = copy / "scala" / "io" / "statesnap" / "tools" / "Release.scala"
    planted.write_text(planted.read_text() + 'object P { def f(): Nothing = throw new IllegalStateException("x")\n'
                       '  def g(): Option[Int] = None.orElse(throw\n    new UnsupportedOperationException("y")) }')
    monkeypatch.setattr(sys.modules[__name__], "ROOT", copy)
    assert inline_errors() == ["scala/io/statesnap/tools/Release.scala: new IllegalStateException(",
                               "scala/io/statesnap/tools/Release.scala: new UnsupportedOperationException("]


def test_a_tools_refusal_is_worded_in_its_areas_factory():
    """A tool's refusal (StoppedCheckpoint.refuse) takes its reason from the factory of its area (*Refusals):
    a reason written inline at a refusal site drifts from the others of its area."""
    tools = [path for package in ("checkpoint", "tools") for path in ROOT.glob(f"**/io/statesnap/{package}/*.scala")
             if not path.name.endswith("Refusals.scala")]
    assert len(tools) > 20, f"the tools' sources are not where this looks: {tools}"  # it once read none
    inline = sorted(f"{path.relative_to(ROOT)}: {match.group(0)}" for path in tools
                    for match in re.finditer(r"\brefuse\(\s*s?\"", without_comments(path.read_text())))
    assert not inline, "refusal reasons written inline:\n" + "\n".join(inline)
