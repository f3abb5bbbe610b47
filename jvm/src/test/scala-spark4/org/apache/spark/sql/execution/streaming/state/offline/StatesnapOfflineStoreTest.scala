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
    val f = new ProviderFixture()
    f.commitState(f.sparkRocksDb(), 0, "a", schema, Map("x" -> Seq(1), "y" -> Seq(2)))
    f.commitState(f.sparkRocksDb(), 1, "b", schema, Map("z" -> Seq(3)))
    val e = assertThrows(classOf[IllegalStateException], () => StatesnapOfflineStore.read(
      StateStoreId(f.checkpoint, 0, 0), f.keySchema, schema, 0, jobConf, new Configuration, 2, None))
    assertTrue(e.getMessage, e.getMessage.contains("0/0 version 2 keeps column families"))
    assertEquals("the store is left as it was", Map("z" -> Seq(3)), f.readWithSpark(2, "b", schema))
  }
}
