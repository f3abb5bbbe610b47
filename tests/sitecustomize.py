"""Run by Python as it starts, in every process with tests/ on its path: the suites' (conftest.py puts it there for
every process a test starts: Spark's Python workers, the planning worker of each transformWithState query start, the
apps, the tools), and those of make's targets but the demo (the Makefile exports it).

Spark puts its own copy of pyspark first on a Python worker's path (SPARK_HOME/python/lib/pyspark.zip and py4j's
zip; SPARK_HOME is the installed pyspark package). Python compiles every module it imports from a zip anew in each
process (zipimport keeps no bytecode cache): a fresh worker spends about a second of CPU importing pyspark, and Spark
starts one for every transformWithState query start (TransformWithStateInPySparkPythonPreInitRunner): 2.3 s a
start of a one-state query here, 1.25 s with this. The zips hold the very package the venv has installed, whose
bytecode is cached: moved to the end of the path, they are read only for what the venv's pyspark lacks (nothing)."""
import sys

sys.path.sort(key=lambda entry: entry.endswith(".zip") and "/pyspark/python/lib/" in entry.replace("\\", "/"))
