package io.statesnap.provider

import org.apache.spark.sql.types.StructType
import org.apache.spark.unsafe.types.UTF8String
import org.junit.Assert._
import org.junit.Test

/**
 * A migration overwrites values below Spark's store API (without Spark's read before each put): what Spark
 * itself sees afterwards must be as if every entry had been put through the store.
 */
class MigrationWritePathTest {
  private val changelog = "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled" -> "true"
  private val v1 = StructType.fromDDL("count INT, name STRING")
  private val v2 = StructType.fromDDL("count BIGINT, name STRING, note STRING")
  private val customer = StructType.fromDDL("city STRING")
  private val entries = 500

  @Test def rewriteReplaysFromTheChangelogLeavesOtherStatesAloneAndKeepsTheRowCount(): Unit = {
    val f = new ProviderFixture
    val writer = f.statesnap(changelog)
    val first = writer.getStore(0, None)
    // Three states with adjacent column-family ids: only the middle one is migrated.
    Seq("accounts" -> customer, "orders" -> v1, "zones" -> customer).foreach { case (s, v) => f.open(first, s, v) }
    (0 until entries).foreach { i =>
      first.put(f.key(s"k$i"), f.row(v1, i - 250, UTF8String.fromString(s"n$i")),
        "orders")
      Seq("accounts", "zones").foreach { s =>
        first.put(f.key(s"k$i"), f.row(customer, UTF8String.fromString(s"$s$i")), s)
      }
    }
    assertEquals(1L, first.commit())
    writer.close()

    val migrating = f.statesnap(changelog)
    val store = migrating.getStore(1, None)
    Seq("accounts" -> customer, "orders" -> v2, "zones" -> customer).foreach { case (s, v) => f.open(store, s, v) }
    assertEquals(2L, store.commit())
    assertEquals(entries.toLong, store.metrics.customMetrics(StatesnapMetrics.MigratedEntries))
    assertEquals(3L * entries, store.metrics.numKeys)
    migrating.close()

    // A fresh Spark provider rebuilds version 2 by replaying both changelogs: the rewrite must be in them.
    assertEquals((0 until entries).map(i => s"k$i" -> Seq(s"${i - 250}", s"n$i", "null")).toMap,
      asText(f.readWithSpark(2, "orders", v2, changelog)))
    Seq("accounts", "zones").foreach { s =>
      assertEquals((0 until entries).map(i => s"k$i" -> s"$s$i").toMap,
        asText(f.readWithSpark(2, s, customer, changelog)).map { case (k, v) => k -> v.head })
    }
  }

  private def asText(state: Map[String, Seq[Any]]): Map[String, Seq[String]] =
    state.map { case (k, v) => k -> v.map(String.valueOf) }
}
