package org.apache.spark.sql.execution.streaming.state.offline

import io.statesnap.provider.ProviderFixture
import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.execution.streaming.state.{StateStoreConf, StateStoreId}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types.StructType
import org.junit.Assert._
import org.junit.Test

class StatesnapOfflineStoreTest {
  private val schema = StructType.fromDDL("n INT")

  private def jobConf: StateStoreConf = {
    val sqlConf = new SQLConf
    sqlConf.setConfString("spark.sql.streaming.stateStore.coordinatorReportSnapshotUploadLag", "false")
    sqlConf.setConfString("spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled", "false")
    new StateStoreConf(sqlConf)
  }

  /**
   * A store with column families streamed as raw entries and written anew would lose the families' mapping of names
   * to ids: tried, state "b" then read back state "a"'s entries (the id "b" got anew was "a"'s). Refused instead.
   */
  @Test def aStoreWithColumnFamiliesIsRefusedNotStreamedAsBytes(): Unit = {
    val f = withTwoFamilies()
    val e = assertThrows(classOf[IllegalStateException], () => StatesnapOfflineStore.read(
      StateStoreId(f.checkpoint, 0, 0), Seq(family("default")), columnFamilies = false, jobConf, new Configuration, 2,
      None))
    assertTrue(e.getMessage, e.getMessage.contains("0/0 version 2 keeps column families"))
    assertEquals("the store is left as it was", Map("z" -> Seq(3)), f.readWithSpark(2, "b", schema))
  }

  /**
   * Read family by family and written anew with each family created by name: each reads back its own entries. A
   * family not kept empty (statesnap's records) is created only with an entry.
   */
  @Test def aStoreWithColumnFamiliesMovesFamilyByFamily(): Unit = {
    val f = withTwoFamilies()
    // Another order than the ids': each is found by its name.
    val families = Seq(family("b"), family("a"), family("c").copy(keptEmpty = false))
    val read = StatesnapOfflineStore.read(StateStoreId(f.checkpoint, 0, 0), families, columnFamilies = true, jobConf,
      new Configuration, 2, None)
    val entries = try read.entries.map(e => e.copy(key = e.key.clone, value = e.value.clone)).toList
      finally read.close()
    assertEquals(Seq(0, 1, 1), entries.map(_.family).sorted)
    val written = StatesnapOfflineStore.writeAnew(StateStoreId(f.checkpoint, 0, 0), families, columnFamilies = true,
      jobConf, new Configuration, 3, sortedRuns = 0)
    try { entries.reverse.foreach(written.put); written.commit() } finally written.close()
    assertEquals(Map("x" -> Seq(1), "y" -> Seq(2)), f.readWithSpark(3, "a", schema))
    assertEquals(Map("z" -> Seq(3)), f.readWithSpark(3, "b", schema))
    // Read with a and b alone: a family "c" would be one the job does not know.
    StatesnapOfflineStore.read(StateStoreId(f.checkpoint, 0, 0), families.take(2), columnFamilies = true, jobConf,
      new Configuration, 3, None).close()
  }

  /**
   * A family the job was not given would be lost, and one flagged otherwise counted apart: both refused. A family
   * it was given that the store lacks has nothing to move.
   */
  @Test def aFamilyTheJobDoesNotKnowOrFlagsOtherwiseIsRefused(): Unit = {
    val f = withTwoFamilies()
    def read(families: Seq[StatesnapOfflineStore.Family]) = StatesnapOfflineStore.read(StateStoreId(f.checkpoint, 0,
      0), families, columnFamilies = true, jobConf, new Configuration, 2, None)
    val refusals = Seq(
      Seq(family("a")) -> ("keeps 2 column families and 0 internal ones besides the default, where those the job " +
        "moves are 'a'"),
      Seq(family("a"), family("b").copy(internal = true)) -> "where those the job moves are 'a', 'b' (internal)")
    for ((families, says) <- refusals) {
      val e = assertThrows(classOf[IllegalStateException], () => read(families))
      assertTrue(e.getMessage, e.getMessage.contains("0/0 version 2 ") && e.getMessage.contains(says))
    }
    val absent = read(Seq(family("a"), family("c"), family("b")))
    try assertEquals(Seq(0, 0, 2), absent.entries.map(_.family).toList) finally absent.close()
  }

  /** The default family of a store with families holds nothing an operator wrote: an entry there is refused. */
  @Test def anEntryInTheDefaultFamilyIsRefusedNotLeftBehind(): Unit = {
    val f = withTwoFamilies()
    val provider = f.sparkRocksDb()
    val store = provider.getStore(2, None)
    store.put(f.key("d"), f.row(StructType.fromDDL("value BINARY"), Array[Byte](1)))
    assertEquals(3L, store.commit())
    provider.close()
    val e = assertThrows(classOf[IllegalStateException], () => StatesnapOfflineStore.read(StateStoreId(f.checkpoint,
      0, 0), Seq(family("a"), family("b")), columnFamilies = true, jobConf, new Configuration, 3, None))
    assertTrue(e.getMessage, e.getMessage.contains("0/0 version 3 holds entries in its default column family"))
  }

  /**
   * A store without families is loaded in bulk from the runs in key order its entries arrive in; entries past the
   * runs it was told of (a source read in no order) are put: Spark's provider loads every entry back, whatever the
   * order they came in.
   */
  @Test def aStoreWithoutFamiliesIsLoadedFromSortedRunsAndWhatIsNotSortedIsPut(): Unit = {
    // Keys in RocksDB's bytewise order as their numbers are.
    def entry(i: Int) = StatesnapOfflineStore.Entry(0, Array[Byte](0, (i >> 8).toByte, i.toByte), Array(i.toByte))
    val layout = Seq(StatesnapOfflineStore.Family("default", schema, schema, 0, internal = false))
    val cases = Seq(
      2 -> ((0 until 100 by 2) ++ (1 until 100 by 2) ++ (300 until 200 by -1)), // two runs, then no order
      10 -> (0 until 6).flatMap(r => r until 120 by 6)) // six runs: more than RocksDB's level-0 compaction trigger
    for ((runs, arriving) <- cases) {
      val f = new ProviderFixture()
      val id = StateStoreId(f.checkpoint, 0, 0)
      val written = StatesnapOfflineStore.writeAnew(id, layout, columnFamilies = false, jobConf, new Configuration,
        1, sortedRuns = runs)
      try { arriving.foreach(i => written.put(entry(i))); written.commit() } finally written.close()
      val read = StatesnapOfflineStore.read(id, layout, columnFamilies = false, jobConf, new Configuration, 1, None)
      val back = try read.entries.map(e => (e.key.toSeq, e.value.toSeq)).toList finally read.close()
      assertEquals(s"$runs runs", arriving.sorted.map(i => (entry(i).key.toSeq, entry(i).value.toSeq)).toList, back)
    }
  }

  /** Spark's RocksDB provider's store with families `a` (keys x, y) and `b` (key z), committed as version 2. */
  private def withTwoFamilies(): ProviderFixture = {
    val f = new ProviderFixture()
    f.commitState(f.sparkRocksDb(), 0, "a", schema, Map("x" -> Seq(1), "y" -> Seq(2)))
    f.commitState(f.sparkRocksDb(), 1, "b", schema, Map("z" -> Seq(3)))
    f
  }

  private def family(name: String) = StatesnapOfflineStore.Family(name, StructType.fromDDL("id STRING"), schema, 0,
    internal = false)
}
