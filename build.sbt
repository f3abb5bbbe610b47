// For users who build statesnap with sbt, for the pinned Spark minor. `make` does not use this file: it compiles
// jvm/ with the Scala compiler shipped inside each supported pyspark (scripts/build_jar.sh), one jar per minor.
// tests/test_build_versions.py keeps the versions below equal to the pinned pyspark's jars and to the Python
// package's version.
ThisBuild / scalaVersion := "2.13.17"

val sparkVersion = "4.1.4"

// jvm/minors: each Spark minor and the source folders its jar compiles.
val sourceFolders: Seq[String] = IO.readLines(file("jvm/minors")).map(_.trim)
  .filterNot(line => line.isEmpty || line.startsWith("#")).map(_.split("\\s+").toSeq)
  .collectFirst { case minor +: folders if minor == sparkVersion.split('.').take(2).mkString(".") => folders }
  .getOrElse(sys.error(s"jvm/minors does not list Spark $sparkVersion's minor"))

lazy val statesnap = (project in file("."))
  .settings(
    name := "statesnap",
    version := "0.1.0",
    // The pinned minor's source folders, as jvm/minors lists them for every build (tests/test_build_versions.py
    // checks that this reads them).
    Compile / unmanagedSourceDirectories := sourceFolders.map(baseDirectory.value / "jvm" / "src" / "main" / _),
    Test / unmanagedSourceDirectories :=
      sourceFolders.map(baseDirectory.value / "jvm" / "src" / "test" / _).filter(_.exists),
    Test / resourceDirectory := baseDirectory.value / "jvm" / "src" / "test" / "resources",
    scalacOptions ++= Seq("-release", "17", "-deprecation", "-feature"),
    libraryDependencies ++= Seq(
      "org.apache.spark" %% "spark-sql" % sparkVersion % Provided,
      "junit" % "junit" % "4.13.2" % Test,
      "com.github.sbt" % "junit-interface" % "0.13.3" % Test
    ),
    Test / fork := true
  )
