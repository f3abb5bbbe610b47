package io.statesnap

/**
 * The Scala 2.13 library members shared code uses, for Scala 2.12 (`scala-spark3`). Spark 4.x runs Scala 2.13,
 * which has them all, so this is empty: shared code imports `ScalaCompat._` and compiles on both.
 */
object ScalaCompat
