# Every target sets itself up on a fresh machine: apt packages, the venv with the pinned requirements, the jar.
# `make demo` and `make test` are the two commands; CI (.ci/run) calls `make test`.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
JAR := python/statesnap/jars/statesnap.jar
MAIN_SOURCES := $(shell find jvm/src/main -name '*.scala' 2>/dev/null)
TEST_SOURCES := $(shell find jvm/src/test -name '*.scala' 2>/dev/null)
SPARK_JARS = $(shell $(PY) -c 'import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))')
export PYTHONPATH := $(CURDIR)/python:$(CURDIR)/tests
export PYSPARK_PYTHON := $(CURDIR)/$(PY)

.PHONY: all setup jar demo test test-fast test-jvm test-python bench clean

all: jar

# Debian packages: a JDK to compile and run Scala, JUnit 4 for the JVM unit tests.
build/.apt-stamp:
	@if ! command -v javac >/dev/null || [ ! -f /usr/share/java/junit4.jar ]; then \
	  echo "installing apt packages (JDK 17, junit4)"; \
	  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q openjdk-17-jdk-headless junit4; \
	fi
	@mkdir -p build && touch $@

$(VENV)/.stamp: requirements.txt
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --disable-pip-version-check -r requirements.txt
	@touch $@

setup: build/.apt-stamp $(VENV)/.stamp

$(JAR): $(MAIN_SOURCES) scripts/build_jar.sh | setup
	scripts/build_jar.sh main

jar: $(JAR)

build/test-classes/.stamp: $(TEST_SOURCES) $(JAR)
	scripts/build_jar.sh test
	@touch $@

test-jvm: build/test-classes/.stamp
	java -Dlog4j.configurationFile=jvm/src/test/resources/log4j2.properties -cp "$(SPARK_JARS)/*:build/classes:build/test-classes:/usr/share/java/junit4.jar:/usr/share/java/hamcrest-core.jar" \
	  org.junit.runner.JUnitCore $$(cd build/test-classes && find . -name '*Test.class' | sed 's|^\./||; s|\.class$$||; s|/|.|g' | sort)

test-python: build/test-classes/.stamp
	$(PY) -m pytest tests

# Everything CI runs: the JVM unit tests, then pytest (whose summary is the last line).
test: test-jvm test-python

# The quick subset for local work: skips the end-to-end cases marked slow.
test-fast: test-jvm
	$(PY) -m pytest tests -m "not slow"

demo: jar
	$(PY) scripts/demo.py

$(VENV)/.bench-stamp: bench/requirements.txt $(VENV)/.stamp
	$(VENV)/bin/pip install -q --disable-pip-version-check -r bench/requirements.txt
	@touch $@

# Benchmarks are not tests: figures are ratios against Spark's stock provider measured in the same run.
bench: jar $(VENV)/.bench-stamp
	$(PY) bench/run.py $(BENCH_ARGS)

clean:
	rm -rf build python/statesnap/jars
