package io.statesnap.provider

import java.util.UUID

import io.statesnap.ProviderClasses
import io.statesnap.registration.{QueryRegistrations, ScopeRegistrations}
import io.statesnap.snapshot.GroupStateSnapshot
import io.statesnap.testkit.TempDirs
import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types.StructType
import org.apache.spark.unsafe.types.UTF8String
import org.junit.Assert._
import org.junit.Test

/**
 * Spark 3.5's provider on a real RocksDB checkpoint, driven as (flat)MapGroupsWithState drives it: a restart whose
 * group state gained a field migrates every entry before `getStore` hands the store out, and Spark's own provider
 * and schema check then read what statesnap wrote.
 */
class GroupStateMigrationTest {
  private val checkpoint = TempDirs.create("statesnap-35-provider-test").toString
  private val id = StateStoreId(checkpoint, 0, 0)
  private val keySchema = StructType.fromDDL("id STRING")
  private val v1 = GroupStateSnapshot.wrap(StructType.fromDDL("count BIGINT"), withTimeout = false)
  private val v2 = GroupStateSnapshot.wrap(StructType.fromDDL("count BIGINT, tag STRING"), withTimeout = false)

  /** A provider of one query run, initialized as Spark's executor does for this operator. */
  private def provider(valueSchema: StructType, statesnap: Boolean = true): StateStoreProvider = {
    val sqlConf = new SQLConf
    // What statesnap's listener sets for a query run it serves.
    sqlConf.setConfString(QueryRegistrations.Conf,
      QueryRegistrations(checkpoint, ScopeRegistrations(), Nil, UUID.randomUUID().toString).toJson)
    val provider = if (statesnap) new StatesnapStateStoreProvider
      else StateStoreProvider.create(ProviderClasses.SparkRocksDB)
    provider.init(id, keySchema, valueSchema, 0, new StateStoreConf(sqlConf), new Configuration)
    provider
  }

  private def key(id: String): UnsafeRow = UnsafeProjection.create(keySchema)(InternalRow(UTF8String.fromString(id)))

  private def groupState(schema: StructType, values: Any*): UnsafeRow =
    UnsafeProjection.create(schema)(InternalRow(InternalRow.fromSeq(values)))

  @Test def aGroupStateThatGainedAFieldMigratesBeforeTheStoreIsHandedOut(): Unit = {
    val first = provider(v1)
    val store = first.getStore(0)
    (1 to 3).foreach(i => store.put(key(s"k$i"), groupState(v1, i.toLong)))
    assertEquals(1L, store.commit())
    first.close()

    val restarted = provider(v2)
    val migrated = restarted.getStore(1)
    val k2 = migrated.get(key("k2")).getStruct(0, 2)
    assertEquals(2L, k2.getLong(0))
    assertTrue(k2.isNullAt(1))
    assertEquals(2L, migrated.commit())
    assertEquals(3L, migrated.metrics.customMetrics(StatesnapMetrics.MigratedEntries)) // Spark's: after commit
    restarted.close()

    val spark = provider(v2, statesnap = false)
    val read = spark.getStore(2)
    try {
      assertEquals(3, read.iterator().size)
      assertEquals(3L, read.get(key("k3")).getStruct(0, 2).getLong(0))
    } finally {
      read.abort()
      spark.close()
    }
    // Spark's own schema check, on the schema file statesnap rewrote after the migration: the new layout passes.
    val checker = new StateSchemaCompatibilityChecker(StateStoreProviderId(id, UUID.randomUUID()), new Configuration)
    checker.check(keySchema, v2)
    assertThrows(classOf[Exception], () => checker.check(keySchema, StructType.fromDDL("groupState STRUCT<n: INT>")))
  }
}
