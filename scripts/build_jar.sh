#!/usr/bin/env bash
# Compiles jvm/src/main with the Scala compiler that ships inside the pinned pyspark's jars/ and packages
# python/statesnap/jars/statesnap.jar. No Maven, no sbt: nothing is downloaded.
# Usage: scripts/build_jar.sh [main|test|bench]
#   test:  compiles jvm/src/test against JUnit 4 into build/test-classes
#   bench: compiles jvm/src/bench (JVM benchmark harnesses) into build/bench-classes
set -euo pipefail
cd "$(dirname "$0")/.."
what="${1:-main}"
PY="${PYTHON:-.venv/bin/python}"
SPARK_JARS="$("$PY" -c 'import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))')"
# Glob, never hard-code: the Scala version is whatever the pinned pyspark ships.
scala_jar() { ls "$SPARK_JARS"/scala-"$1"-2.13.*.jar | head -n 1; }
SCALAC_CP="$(scala_jar compiler):$(scala_jar library):$(scala_jar reflect)"
scalac() { java -Xss8m -XX:TieredStopAtLevel=1 -cp "$SCALAC_CP" scala.tools.nsc.Main -release 17 -deprecation -feature "$@"; }

case "$what" in
  main)
    rm -rf build/classes && mkdir -p build/classes python/statesnap/jars
    scalac -classpath "$SPARK_JARS/*" -d build/classes $(find jvm/src/main/scala -name '*.scala')
    jar --create --file python/statesnap/jars/statesnap.jar -C build/classes .
    echo "built python/statesnap/jars/statesnap.jar"
    ;;
  test)
    JUNIT=/usr/share/java/junit4.jar
    rm -rf build/test-classes && mkdir -p build/test-classes
    scalac -classpath "$SPARK_JARS/*:build/classes:$JUNIT" -d build/test-classes $(find jvm/src/test/scala -name '*.scala')
    echo "built build/test-classes"
    ;;
  bench)
    rm -rf build/bench-classes && mkdir -p build/bench-classes
    scalac -classpath "$SPARK_JARS/*:build/classes" -d build/bench-classes $(find jvm/src/bench/scala -name '*.scala')
    echo "built build/bench-classes"
    ;;
  *) echo "usage: $0 [main|test|bench]" >&2; exit 2 ;;
esac
