// For users who build statesnap with sbt, for the pinned Spark minor. `make` does not use this file: it compiles
// jvm/ with the Scala compiler shipped inside each supported pyspark (scripts/build_jar.sh), one jar per minor.
// tests/test_build_versions.py keeps the versions below equal to the pinned pyspark's jars and to the Python
// package's version.
ThisBuild / scalaVersion := "2.13.17"

val sparkVersion = "4.1.4"

lazy val statesnap = (project in file("."))
  .settings(
    name := "statesnap",
    version := "0.1.0",
    // The pinned minor's folders, as scripts/build_jar.sh picks them: its own and the ranges that hold it
    // (tests/test_build_versions.py checks the list).
    Compile / unmanagedSourceDirectories :=
      Seq("scala", "shims/spark-4.1", "shims/spark-4.0-4.3", "shims/spark-4.1-4.3")
        .map(baseDirectory.value / "jvm" / "src" / "main" / _),
    Test / unmanagedSourceDirectories :=
      Seq("scala", "shims/spark-4.0-4.3").map(baseDirectory.value / "jvm" / "src" / "test" / _),
    Test / resourceDirectory := baseDirectory.value / "jvm" / "src" / "test" / "resources",
    scalacOptions ++= Seq("-release", "17", "-deprecation", "-feature"),
    libraryDependencies ++= Seq(
      "org.apache.spark" %% "spark-sql" % sparkVersion % Provided,
      "junit" % "junit" % "4.13.2" % Test,
      "com.github.sbt" % "junit-interface" % "0.13.3" % Test
    ),
    Test / fork := true
  )
