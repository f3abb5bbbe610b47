#!/usr/bin/env bash
# Compiles statesnap for the Spark minor of the pyspark in $PYTHON's environment (default: the pinned .venv), with
# the Scala compiler that ships inside that pyspark's jars/, and packages
# python/statesnap/jars/statesnap-spark<minor>.jar. No Maven, no sbt: nothing is downloaded.
# Sources: jvm/src/main/scala (every Spark minor) plus jvm/src/main/shims/spark-<minor> (what differs between
# minors: the same file names in every minor's folder) and every jvm/src/main/shims/spark-<from>-<to> whose range
# holds the minor (what a run of minors shares, written once). Tests: jvm/src/test/scala and jvm/src/test/shims,
# chosen the same way.
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
[ -d "jvm/src/main/shims/spark-$MINOR" ] ||
  { echo "statesnap has no build for Spark $MINOR (no jvm/src/main/shims/spark-$MINOR)" >&2; exit 2; }
version_le() { [ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | head -n 1)" = "$1" ]; }
# The folders under shim root $1 that this minor compiles: spark-<minor> and the ranges that hold it.
shims() {
  local dirs="" range bounds
  if [ -d "$1/spark-$MINOR" ]; then dirs="$1/spark-$MINOR"; fi
  for range in "$1"/spark-*-*; do
    [ -d "$range" ] || continue
    bounds="${range##*/spark-}"
    if version_le "${bounds%-*}" "$MINOR" && version_le "$MINOR" "${bounds#*-}"; then dirs="$dirs $range"; fi
  done
  echo "$dirs"
}
SHIMS="$(shims jvm/src/main/shims)"
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
    scalac -classpath "$SPARK_JARS/*" -d "$OUT/classes" $(find jvm/src/main/scala $SHIMS -name '*.scala')
    jar --create --file "$jar" -C "$OUT/classes" .
    echo "built $jar"
    ;;
  test)
    JUNIT=/usr/share/java/junit4.jar
    rm -rf "$OUT/test-classes" && mkdir -p "$OUT/test-classes"
    scalac -classpath "$SPARK_JARS/*:$OUT/classes:$JUNIT" -d "$OUT/test-classes" \
      $(find jvm/src/test/scala $(shims jvm/src/test/shims) -name '*.scala')
    echo "built $OUT/test-classes"
    ;;
  bench)
    rm -rf "$OUT/bench-classes" && mkdir -p "$OUT/bench-classes"
    scalac -classpath "$SPARK_JARS/*:$OUT/classes" -d "$OUT/bench-classes" $(find jvm/src/bench/scala -name '*.scala')
    echo "built $OUT/bench-classes"
    ;;
  *) echo "usage: $0 [main|test|bench]" >&2; exit 2 ;;
esac
