package io.statesnap.provider

import org.apache.spark.sql.execution.streaming.state.{NoPrefixKeyStateEncoderSpec, StateStore}
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

  @Test def listRewriteKeepsEveryElementInOrderAndReplaysFromTheChangelog(): Unit = {
    val f = new ProviderFixture
    def openList(store: StateStore, schema: StructType): Unit = store.createColFamilyIfAbsent("events",
      f.keySchema, schema, NoPrefixKeyStateEncoderSpec(f.keySchema), useMultipleValuesPerKey = true)
    // Key i holds i % 4 + 1 elements (a one-element list has no delimiter to get wrong), pushed one at a time.
    def elements(i: Int): Seq[Int] = (0 to i % 4).map(j => i * 10 + j - 250)
    val writer = f.statesnap(changelog)
    val first = writer.getStore(0, None)
    Seq("accounts" -> customer, "zones" -> customer).foreach { case (s, v) => f.open(first, s, v) }
    openList(first, v1)
    (0 until entries).foreach { i =>
      elements(i).foreach(n => first.merge(f.key(s"k$i"), f.row(v1, n, UTF8String.fromString(s"e$n")), "events"))
      Seq("accounts", "zones").foreach(s => first.put(f.key(s"k$i"), f.row(customer, UTF8String.fromString(s)), s))
    }
    assertEquals(1L, first.commit())
    writer.close()

    val migrating = f.statesnap(changelog)
    val store = migrating.getStore(1, None)
    Seq("accounts" -> customer, "zones" -> customer).foreach { case (s, v) => f.open(store, s, v) }
    openList(store, v2)
    assertEquals(2L, store.commit())
    assertEquals((0 until entries).map(elements(_).size).sum.toLong,
      store.metrics.customMetrics(StatesnapMetrics.MigratedEntries))
    migrating.close()

    // Spark's own provider rebuilds version 2 from the changelogs and reads every list in its order.
    val reader = f.sparkRocksDb(changelog)
    val read = reader.getStore(2, None)
    openList(read, v2)
    try (0 until entries).foreach { i =>
      assertEquals(s"k$i", elements(i).map(n => Seq(n.toLong, s"e$n", null)),
        read.valuesIterator(f.key(s"k$i"), "events").map(_.toSeq(v2)).toSeq.map(_.map {
          case s: UTF8String => s.toString
          case other => other
        }))
    } finally { read.abort(); reader.close() }
  }

  private def asText(state: Map[String, Seq[Any]]): Map[String, Seq[String]] =
    state.map { case (k, v) => k -> v.map(String.valueOf) }
}
