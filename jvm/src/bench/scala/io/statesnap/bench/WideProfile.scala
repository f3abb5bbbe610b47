package io.statesnap.bench

import org.apache.spark.sql.Encoders
import org.apache.spark.sql.streaming._

/*
 * A wide nested per-key state for the Avro comparison (`TransformWithStateBenchmark avro-evolved`): 17 top-level
 * fields, two of them structs, an array of strings, an array of ints and a string map, about 300 bytes per entry, so
 * that each batch's time goes to reading and writing state rather than to Spark's per-row work around it.
 * v1 -> v2 is an evolution Spark's Avro check accepts (Avro resolution: int -> long promotion, added nullable fields):
 * two top-level counters and the four counters of a nested struct widened, the elements of an array widened, one
 * field added at the top level and one inside the nested struct.
 */
final case class Address(street: String, city: String, zip: Int, country: String)

final case class CountersV1(clicks: Int, views: Int, carts: Int, purchases: Int)

final case class CountersV2(clicks: Long, views: Long, carts: Long, purchases: Long, returns: Option[Long])

final case class WideV1(count: Int, total: Int, smallest: Int, largest: Int, last: Int, label: String,
    segment: String, region: String, score: Double, active: Boolean, createdAt: Long, updatedAt: Long,
    address: Address, counters: CountersV1, tags: Seq[String], recent: Seq[Int], attributes: Map[String, String]) {
  def add(amount: Int): WideV1 = copy(count = count + 1, total = total + amount, smallest = smallest min amount,
    largest = largest max amount, last = amount, score = score * 0.9 + amount, updatedAt = updatedAt + 1,
    counters = counters.copy(clicks = counters.clicks + 1, views = counters.views + 2,
      purchases = counters.purchases + (if (amount % 7 == 0) 1 else 0)),
    recent = (amount +: recent).take(WideProfile.RecentLength))
}

final case class WideV2(count: Long, total: Long, smallest: Int, largest: Int, last: Int, label: String,
    segment: String, region: String, score: Double, active: Boolean, createdAt: Long, updatedAt: Long,
    address: Address, counters: CountersV2, tags: Seq[String], recent: Seq[Long], attributes: Map[String, String],
    note: String) {
  def add(amount: Int): WideV2 = copy(count = count + 1, total = total + amount, smallest = smallest min amount,
    largest = largest max amount, last = amount, score = score * 0.9 + amount, updatedAt = updatedAt + 1,
    counters = counters.copy(clicks = counters.clicks + 1, views = counters.views + 2,
      purchases = counters.purchases + (if (amount % 7 == 0) 1 else 0)),
    recent = (amount.toLong +: recent).take(WideProfile.RecentLength))
}

object WideProfile {
  val RecentLength = 8
  private def address(key: Long) = Address(s"${key % 9973} Main Street", s"city-${key % 500}", (key % 99999).toInt,
    "NL")
  private def tags(key: Long) = Seq(s"tag-${key % 13}", s"tag-${key % 17}", s"tag-${key % 19}")
  private def attributes(key: Long) = Map("channel" -> s"ch-${key % 5}", "plan" -> s"plan-${key % 3}",
    "source" -> "bench", "locale" -> "nl-NL")

  def newV1(key: Long): WideV1 = WideV1(0, 0, Int.MaxValue, Int.MinValue, 0, s"c$key", s"segment-${key % 11}",
    s"region-${key % 7}", 0.0, active = true, 1700000000000L + key, 0L, address(key), CountersV1(0, 0, 0, 0),
    tags(key), Seq.empty, attributes(key))

  def newV2(key: Long): WideV2 = WideV2(0, 0, Int.MaxValue, Int.MinValue, 0, s"c$key", s"segment-${key % 11}",
    s"region-${key % 7}", 0.0, active = true, 1700000000000L + key, 0L, address(key),
    CountersV2(0, 0, 0, 0, None), tags(key), Seq.empty, attributes(key), null)
}

/** App v1 of the wide state: reads and updates one [[WideV1]] per key in every batch. */
class WideAppV1 extends StatefulProcessor[Long, Event, (Long, Long)] {
  @transient private var profile: ValueState[WideV1] = _

  override def init(outputMode: OutputMode, timeMode: TimeMode): Unit =
    profile = getHandle.getValueState[WideV1]("profile", Encoders.product[WideV1], TTLConfig.NONE)

  override def handleInputRows(key: Long, rows: Iterator[Event], timers: TimerValues): Iterator[(Long, Long)] = {
    val before = if (profile.exists()) profile.get() else WideProfile.newV1(key)
    val after = rows.foldLeft(before)((p, e) => p.add(e.amount))
    profile.update(after)
    Iterator((key, after.total.toLong))
  }
}

/** App v2: the same state evolved to [[WideV2]]. */
class WideAppV2 extends StatefulProcessor[Long, Event, (Long, Long)] {
  @transient private var profile: ValueState[WideV2] = _

  override def init(outputMode: OutputMode, timeMode: TimeMode): Unit =
    profile = getHandle.getValueState[WideV2]("profile", Encoders.product[WideV2], TTLConfig.NONE)

  override def handleInputRows(key: Long, rows: Iterator[Event], timers: TimerValues): Iterator[(Long, Long)] = {
    val before = if (profile.exists()) profile.get() else WideProfile.newV2(key)
    val after = rows.foldLeft(before)((p, e) => p.add(e.amount))
    profile.update(after)
    Iterator((key, after.total))
  }
}
