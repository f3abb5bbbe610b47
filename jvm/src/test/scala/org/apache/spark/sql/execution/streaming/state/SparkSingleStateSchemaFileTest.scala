package org.apache.spark.sql.execution.streaming.state

import io.statesnap.testkit.TempDirs
import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.types.StructType
import org.junit.Assert._
import org.junit.Test

/** Spark's schema file of a single state, written and read back in the format of the Spark minor it is built for. */
class SparkSingleStateSchemaFileTest {
  private val conf = new Configuration()
  private val key = StructType.fromDDL("k STRING")

  @Test def updateWritesWhatReadReadsAndOnlyWhenItChanges(): Unit = {
    val id = StateStoreId(TempDirs.create("statesnap-schema-file").toUri.toString, 0, 3)
    assertEquals(None, SparkSingleStateSchemaFile.read(id, conf))
    val value = StructType.fromDDL("n BIGINT, tag STRING")
    assertTrue(SparkSingleStateSchemaFile.update(id, key, value, conf).isDefined)
    // Partition 0's file holds the operator's schemas, whichever partition asks.
    assertEquals(Some((key, value)), SparkSingleStateSchemaFile.read(id.copy(partitionId = 1), conf))
    assertEquals(None, SparkSingleStateSchemaFile.update(id, key, value, conf))
  }
}
