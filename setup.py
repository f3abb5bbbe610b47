"""The package's build rules beyond pyproject.toml: a wheel holds statesnap's jar for every Spark minor it
supports (``statesnap.SPARK_MINORS``), or is not built (``make jar`` builds them); and it holds the docs error
messages name (``docs/evolution-rules.md``, ...), under ``statesnap/docs/``: a user of the wheel has no repository."""
import ast
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

PACKAGE = Path(__file__).resolve().parent / "python" / "statesnap"
DOCS = Path(__file__).resolve().parent / "docs"


def spark_minors() -> tuple:
    """SPARK_MINORS as _config.py says it, read without importing the package (it imports pyspark)."""
    tree = ast.parse((PACKAGE / "_config.py").read_text())
    return next(ast.literal_eval(node.value) for node in tree.body if isinstance(node, ast.Assign)
                and any(getattr(t, "id", None) == "SPARK_MINORS" for t in node.targets))


class BuildWithEveryJar(build_py):
    def run(self):
        missing = [m for m in spark_minors() if not (PACKAGE / "jars" / f"statesnap-spark{m}.jar").is_file()]
        if missing:
            raise SystemExit(f"statesnap: no jar for Spark {', '.join(missing)} in {PACKAGE / 'jars'}: a package "
                             "without one would fail on that Spark. Run `make jar` (every minor) first.")
        super().run()
        shipped = Path(self.build_lib) / "statesnap" / "docs"
        shipped.mkdir(parents=True, exist_ok=True)
        for doc in DOCS.glob("*.md"):
            shutil.copy(doc, shipped / doc.name)


setup(cmdclass={"build_py": BuildWithEveryJar})
