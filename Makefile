# Every target sets itself up on a fresh machine: apt packages, the venv with the pinned requirements, the jar.
# `make demo` and `make test` are the two commands; CI (.ci/run) calls `make test`.
SHELL := /bin/bash
# The pinned Spark (requirements.txt, .venv) runs everything; every other Spark minor statesnap ships a jar for has
# its own requirements-spark<minor>.txt and .venv-spark<minor>, and runs the suites of what statesnap serves there.
VENV := .venv
PY := $(VENV)/bin/python
PINNED := 4.1
# Longest suite first: `make test` starts them in this order, two at a time, after the pinned one.
OTHER_SPARKS := 4.3 4.0 3.5 4.2
JAR := python/statesnap/jars/statesnap-spark$(PINNED).jar
CLASSES := build/spark$(PINNED)
MAIN_SOURCES := $(shell find jvm/src/main -name '*.scala' 2>/dev/null)
TEST_SOURCES := $(shell find jvm/src/test -name '*.scala' 2>/dev/null)
# Which suites run on which minor, and the pinned minor's two parts, are tests/minors.py's table (SUITES,
# SECOND_PART): every minor runs `pytest tests`, which collects what that minor runs.
PINNED_PARTS := first second
SPARK_JARS = $(shell $(PY) -c 'import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))')
# tests/ on the path also runs tests/sitecustomize.py in every Python process: a Python worker imports pyspark from
# the venv (its bytecode cached) rather than from Spark's zip of it, which Python compiles anew in each process (about
# a second of CPU for each transformWithState query start; tests/test_value_state_evolution.py: 54 s -> 36 s). The
# demo runs as a user runs it, without it.
export PYTHONPATH := $(CURDIR)/python:$(CURDIR)/tests
demo: export PYTHONPATH := $(CURDIR)/python
export PYSPARK_PYTHON := $(CURDIR)/$(PY)
# Every Spark driver the suites start (the session's, and the programs they run) is a short JVM on 2 cores, where
# C2's compiler threads and a parallel collector compete with the test for CPU: a short suite runs faster with C1
# only (tests/test_group_state.py alone: 71 s and 55 s -> 44 s and 47 s), a whole minor's suite about as fast
# (clean-clone `make test`: 4.1 1904 s against 1893 s before, 4.0 890 s against 828 s). Spark's launcher adds
# SPARK_SUBMIT_OPTS to the driver's java command. Tests only: the benchmarks and `make demo` run Spark as users do.
TEST_JVM_OPTS := -XX:TieredStopAtLevel=1 -XX:+UseSerialGC
test-python $(PINNED_PARTS:%=test-python-%) test-other-sparks $(OTHER_SPARKS:%=test-spark%) test-fast: \
  export SPARK_SUBMIT_OPTS := $(TEST_JVM_OPTS)
# Each minor's test drivers also map the classes a typical test program loads from an archive written once per run
# (tests/class_archive.py): a subprocess-heavy suite runs about 15 % faster (tests/test_workflow.py and
# tests/test_what_a_user_reads.py: 95 s -> 81 s), an in-session one about even, a whole minor's within the noise of
# two lanes sharing 2 cores (clean clone, 4.1: 1600 s and 1424 s -> 1583 s and 1497 s). Written beside the archive
# and checked by a JVM that maps it first: a truncated archive crashes every JVM that maps it. A driver of another
# class path (an extraClassPath) loads its classes as before, without the JVM's warning on its standard output.
QUIET_CDS := -Xlog:cds=off -Xlog:cds+dynamic=off
class_archive = -XX:SharedArchiveFile=$(CURDIR)/build/spark$(1)/classes.jsa $(QUIET_CDS)
write_class_archive = rm -f $@ $@.tmp && SPARK_SUBMIT_OPTS="$(TEST_JVM_OPTS) $(QUIET_CDS)" $(1) \
	  tests/class_archive.py $@.tmp >$(@D)/class-archive.log 2>&1 && \
	  java -XX:SharedArchiveFile=$@.tmp $(QUIET_CDS) -version 2>/dev/null && mv $@.tmp $@
$(CLASSES)/classes.jsa: tests/class_archive.py $(JAR) $(VENV)/.stamp
	$(call write_class_archive,$(PY))
build/spark%/classes.jsa: tests/class_archive.py python/statesnap/jars/statesnap-spark%.jar .venv-spark%/.stamp
	$(call write_class_archive,.venv-spark$*/bin/python)
# Each suite's slowest cases, printed above its summary: where CI's time goes.
PYTEST_ARGS := --durations=15

.PHONY: all setup jar wheel demo test test-fast test-jvm test-python $(PINNED_PARTS:%=test-python-%) \
  test-other-sparks $(OTHER_SPARKS:%=test-spark%) bench bench-classes clean

all: jar

# Debian packages: a JDK to compile and run Scala, JUnit 4 for the JVM unit tests.
build/.apt-stamp:
	@if ! command -v javac >/dev/null || [ ! -f /usr/share/java/junit4.jar ]; then \
	  echo "statesnap needs Debian packages openjdk-17-jdk-headless and junit4: installing them with apt-get," \
	    "which needs root (or install them yourself and run make again)"; \
	  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q openjdk-17-jdk-headless junit4; \
	fi
	@mkdir -p build && touch $@

$(VENV)/.stamp: requirements.txt
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --disable-pip-version-check -r requirements.txt
	@touch $@

# Kept after a build: make would otherwise delete a venv's stamp it reached through a pattern rule.
.PRECIOUS: .venv-spark%/.stamp
.venv-spark%/.stamp: requirements-spark%.txt
	python3 -m venv .venv-spark$*
	.venv-spark$*/bin/pip install -q --disable-pip-version-check -r $<
	@touch $@

setup: build/.apt-stamp $(VENV)/.stamp

$(JAR): $(MAIN_SOURCES) jvm/minors scripts/build_jar.sh | setup
	scripts/build_jar.sh main

python/statesnap/jars/statesnap-spark%.jar: $(MAIN_SOURCES) jvm/minors scripts/build_jar.sh .venv-spark%/.stamp | build/.apt-stamp
	PYTHON=.venv-spark$*/bin/python scripts/build_jar.sh main

# One jar per Spark minor: `make jar` builds them all (the package needs every one), `make jar SPARK=4.2` one.
jar: $(if $(SPARK),$(if $(filter $(PINNED),$(SPARK)),$(JAR),python/statesnap/jars/statesnap-spark$(SPARK).jar),\
  $(JAR) $(OTHER_SPARKS:%=python/statesnap/jars/statesnap-spark%.jar))

# The wheel, with every minor's jar (its build refuses without one): dist/statesnap-<version>-py3-none-any.whl.
wheel: jar $(VENV)/.wheel-stamp
	rm -rf dist && $(PY) -m build --wheel --no-isolation --outdir dist .

$(VENV)/.wheel-stamp: requirements-build.txt $(VENV)/.stamp
	$(VENV)/bin/pip install -q --disable-pip-version-check -r requirements-build.txt
	@touch $@

$(CLASSES)/test-classes/.stamp: $(TEST_SOURCES) $(JAR)
	scripts/build_jar.sh test
	@touch $@

build/spark%/test-classes/.stamp: $(TEST_SOURCES) python/statesnap/jars/statesnap-spark%.jar
	PYTHON=.venv-spark$*/bin/python scripts/build_jar.sh test
	@touch $@

JUNIT_CP := /usr/share/java/junit4.jar:/usr/share/java/hamcrest-core.jar
# The JUnit suite on one Spark minor: $(call junit,<that pyspark's jars directory>,<minor>). A small heap, so that a
# corrupt length field that allocates before it reads fails the record property tests (RecordBytesPropertyTest).
# jvm/src/test/hadoop: Hadoop's configuration there (local files without a forked process per file).
junit = java -Xmx512m $(TEST_JVM_OPTS) -Dlog4j.configurationFile=jvm/src/test/resources/log4j2.properties \
	  -cp "jvm/src/test/hadoop:$(1)/*:build/spark$(2)/classes:build/spark$(2)/test-classes:$(JUNIT_CP)" org.junit.runner.JUnitCore \
	  $$(cd build/spark$(2)/test-classes && find . -name '*Test.class' | sed 's|^\./||; s|\.class$$||; s|/|.|g' | sort)
test-jvm: $(CLASSES)/test-classes/.stamp
	$(call junit,$(SPARK_JARS),$(PINNED))

# The end-to-end suites also install the wheel (tests/test_wheel.py) into a fresh venv.
# The pinned minor's suites run as two parts of about the same length, so that `make test` keeps both of its slots
# busy to the end: `second` the modules of tests/minors.py's SECOND_PART, `first` every other one (`make test-python`
# runs both).
# Each part's output is also in build/test-<minor>-<part>.log as it runs (`make test` prints it when the part ends).
test-python: $(PINNED_PARTS:%=test-python-%)

# The first part runs the wheel's suites (tests/test_wheel.py, tests/test_quick_start.py); the second, none, starts
# as soon as the pinned minor is set up, while the other slot builds the rest.
test-python-first: wheel
$(PINNED_PARTS:%=test-python-%): test-python-%: $(CLASSES)/test-classes/.stamp $(CLASSES)/classes.jsa
	SPARK_SUBMIT_OPTS="$$SPARK_SUBMIT_OPTS $(call class_archive,$(PINNED))" \
	  STATESNAP_TEST_LOG=build/test-driver-$(PINNED)-$*.log $(PY) -m pytest $(PYTEST_ARGS) tests --part $* 2>&1 \
	  | tee build/test-$(PINNED)-$*.log; exit $${PIPESTATUS[0]}

# The JUnit suite and the suites of what statesnap serves on another Spark minor, with its own venv and jar:
# `make test-spark4.3`; `make test-other-sparks` runs every other minor's. Each writes its own driver log.
# Every other minor's suite waits for the wheel too (the suites of 3.5 and 4.3 install it), and for the pinned
# minor's set-up (order-only): make starts whatever is ready, so the pinned minor's longer suites start first.
$(OTHER_SPARKS:%=test-spark%): test-spark%: build/spark%/test-classes/.stamp build/spark%/classes.jsa wheel \
    | $(CLASSES)/test-classes/.stamp $(CLASSES)/classes.jsa
	jars=$$(.venv-spark$*/bin/python -c 'import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))'); \
	  $(call junit,$$jars,$*) 2>&1 | tee build/test-$*.log && test $${PIPESTATUS[0]} = 0 && \
	    SPARK_SUBMIT_OPTS="$$SPARK_SUBMIT_OPTS $(call class_archive,$*)" STATESNAP_TEST_LOG=build/test-driver-$*.log \
	    .venv-spark$*/bin/python -m pytest $(PYTEST_ARGS) tests 2>&1 \
	    | tee -a build/test-$*.log; exit $${PIPESTATUS[0]}

test-other-sparks: $(OTHER_SPARKS:%=test-spark%)

# Everything CI runs: the JVM unit tests, the benchmark harnesses' build, the whole pytest suite on the pinned Spark
# (in its two parts) and every other minor's suites, two at a time, set-up included (venvs, jars, class archives: a
# suite starts once what it needs is built, while the other slot builds the rest). The longest first, so that the
# short ones fill in; each one's output is printed whole when it ends, and is in build/test-<minor>[-<part>].log as it
# runs.
test:
	@echo "make test: the suites of Spark $(PINNED) and $(OTHER_SPARKS) run two at a time; each prints its output when it ends"
	@echo "make test: to follow them as they run: tail -f build/test-<minor>.log (the pinned minor's parts:" \
	  "build/test-$(PINNED)-first.log, build/test-$(PINNED)-second.log)"
	$(MAKE) -j2 --output-sync=target test-python-second test-python-first $(OTHER_SPARKS:%=test-spark%) test-jvm \
	  bench-classes

# The quick subset for local work: skips the end-to-end cases marked slow.
test-fast: test-jvm
	$(PY) -m pytest tests -m "not slow"

demo: $(JAR)
	$(PY) scripts/demo.py

%/.bench-stamp: bench/requirements.txt %/.stamp
	$*/bin/pip install -q --disable-pip-version-check -r bench/requirements.txt
	@touch $@

# Benchmarks are not tests: figures are ratios against Spark's stock provider measured in the same run. They run
# on the pinned Spark (bench/results.md) and on each of BENCH_SPARKS (bench/results-spark<minor>.md): 4.0, where
# most managed platforms with transformWithState are, and the newest minor.
BENCH_SPARKS := 4.0 4.3
# The benchmark harnesses, compiled on each minor the benchmarks run on; `make test` builds them, so that a harness the
# product's code no longer compiles with fails CI rather than the next `make bench`.
BENCH_SOURCES := $(shell find jvm/src/bench -name '*.scala')
bench-classes: $(CLASSES)/bench-classes/.stamp $(BENCH_SPARKS:%=build/spark%/bench-classes/.stamp)
$(CLASSES)/bench-classes/.stamp: $(BENCH_SOURCES) $(JAR)
	scripts/build_jar.sh bench
	@touch $@
build/spark%/bench-classes/.stamp: $(BENCH_SOURCES) python/statesnap/jars/statesnap-spark%.jar
	PYTHON=.venv-spark$*/bin/python scripts/build_jar.sh bench
	@touch $@
bench: $(JAR) $(VENV)/.bench-stamp $(BENCH_SPARKS:%=python/statesnap/jars/statesnap-spark%.jar) \
    $(BENCH_SPARKS:%=.venv-spark%/.bench-stamp)
	$(PY) bench/run.py $(BENCH_ARGS)
	for minor in $(BENCH_SPARKS); do .venv-spark$$minor/bin/python bench/run.py $(BENCH_ARGS) || exit 1; done

clean:
	rm -rf build dist python/statesnap/jars
