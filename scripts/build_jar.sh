#!/usr/bin/env bash
# Compiles statesnap for the Spark minor of the pyspark in $PYTHON's environment (default: the pinned .venv), with
# the Scala compiler that ships inside that pyspark's jars/, and packages
# python/statesnap/jars/statesnap-spark<minor>.jar. No Maven, no sbt: nothing is downloaded.
# Sources: the folders jvm/minors lists for the minor, under jvm/src/main; tests: the ones of them that exist under
# jvm/src/test.
# Classes go to build/spark<minor>/.
# Usage: [PYTHON=...] scripts/build_jar.sh [main|test|bench]
#   test:  compiles jvm/src/test against JUnit 4 into build/spark<minor>/test-classes
#   bench: compiles jvm/src/bench (JVM benchmark harnesses) into build/spark<minor>/bench-classes
set -euo pipefail
cd "$(dirname "$0")/.."
what="${1:-main}"
PY="${PYTHON:-.venv/bin/python}"
SPARK_JARS="$("$PY" -c 'import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))')"
MINOR="$("$PY" -c 'import pyspark; print(".".join(pyspark.__version__.split(".")[:2]))')"
FOLDERS="$(awk -v minor="$MINOR" '$1 == minor { $1 = ""; print }' jvm/minors)"
[ -n "$FOLDERS" ] || { echo "statesnap has no build for Spark $MINOR (jvm/minors does not list it)" >&2; exit 2; }
# The minor's folders that exist under jvm/src/$1 (main or test).
sources() {
  local dirs="" folder
  for folder in $FOLDERS; do [ -d "jvm/src/$1/$folder" ] && dirs="$dirs jvm/src/$1/$folder"; done
  echo "$dirs"
}
OUT="build/spark$MINOR"
# Glob, never hard-code: the Scala version is whatever that pyspark ships (2.12 for Spark 3.5, 2.13 for 4.x).
scala_jar() { ls "$SPARK_JARS"/scala-"$1"-2.1[23].*.jar | head -n 1; }
SCALAC_CP="$(scala_jar compiler):$(scala_jar library):$(scala_jar reflect)"
# -release 17 compiles against the JDK 17 API on both Scala versions (2.12 still writes Java 8 bytecode, which
# Java 17 runs).
scalac() {
  java -Xss8m -XX:TieredStopAtLevel=1 -cp "$SCALAC_CP" scala.tools.nsc.Main -release 17 -deprecation -feature "$@"
}

case "$what" in
  main)
    jar="python/statesnap/jars/statesnap-spark$MINOR.jar"
    rm -rf "$OUT/classes" && mkdir -p "$OUT/classes" python/statesnap/jars
    scalac -classpath "$SPARK_JARS/*" -d "$OUT/classes" $(find $(sources main) -name '*.scala')
    # Written aside and renamed over: a JVM still running on the old jar keeps reading its own copy.
    jar --create --file "$jar.tmp" -C "$OUT/classes" . && mv "$jar.tmp" "$jar"
    echo "built $jar"
    ;;
  test)
    JUNIT=/usr/share/java/junit4.jar
    rm -rf "$OUT/test-classes" && mkdir -p "$OUT/test-classes"
    scalac -classpath "$SPARK_JARS/*:$OUT/classes:$JUNIT" -d "$OUT/test-classes" \
      $(find $(sources test) -name '*.scala')
    echo "built $OUT/test-classes"
    ;;
  bench)
    rm -rf "$OUT/bench-classes" && mkdir -p "$OUT/bench-classes"
    scalac -classpath "$SPARK_JARS/*:$OUT/classes" -d "$OUT/bench-classes" $(find jvm/src/bench/scala -name '*.scala')
    echo "built $OUT/bench-classes"
    ;;
  *) echo "usage: $0 [main|test|bench]" >&2; exit 2 ;;
esac
