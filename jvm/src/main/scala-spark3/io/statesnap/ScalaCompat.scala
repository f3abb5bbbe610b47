package io.statesnap

/**
 * The Scala 2.13 library members shared code uses, for Scala 2.12 (Spark 3.5): shared code imports `ScalaCompat._`,
 * which is empty on 2.13 (`scala-spark4`). Not `scala.collection.compat._`: Spark 4.1+ does not ship it.
 */
object ScalaCompat {
  implicit class StringCompat(private val s: String) extends AnyVal {
    def toIntOption: Option[Int] = try Some(s.toInt) catch { case _: NumberFormatException => None }
    def toLongOption: Option[Long] = try Some(s.toLong) catch { case _: NumberFormatException => None }
  }

  implicit class OptionCompanionCompat(private val o: Option.type) extends AnyVal {
    def when[A](condition: Boolean)(a: => A): Option[A] = if (condition) Some(a) else None
  }

  implicit class IteratorCompat[A](private val it: Iterator[A]) extends AnyVal {
    def nextOption(): Option[A] = if (it.hasNext) Some(it.next()) else None
  }

  implicit class TraversableCompat[A](private val xs: TraversableOnce[A]) extends AnyVal {
    def maxOption[B >: A](implicit o: Ordering[B]): Option[A] = if (xs.isEmpty) None else Some(xs.max[B])
    def minByOption[B](f: A => B)(implicit o: Ordering[B]): Option[A] = if (xs.isEmpty) None else Some(xs.minBy(f))
  }

  // An array reaches TraversableCompat only through two implicit conversions, which Scala does not chain.
  implicit class ArrayCompat[A](private val xs: Array[A]) extends AnyVal {
    def maxOption[B >: A](implicit o: Ordering[B]): Option[A] = if (xs.isEmpty) None else Some(xs.max[B])
  }

  implicit class GroupMapCompat[A](private val xs: Seq[A]) extends AnyVal {
    def groupMap[K, B](key: A => K)(f: A => B): Map[K, Seq[B]] = xs.groupBy(key).map { case (k, v) => k -> v.map(f) }
  }
}
