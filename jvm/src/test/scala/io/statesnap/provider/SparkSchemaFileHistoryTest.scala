package io.statesnap.provider

import java.nio.file.Files

import org.apache.commons.io.FileUtils
import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.execution.streaming.state.{SparkSingleStateSchemaFile, StateStoreId}
import org.apache.spark.sql.types.StructType
import org.junit.Assert._
import org.junit.Test

/**
 * Spark's schema file of an operator is rewritten by partition 0 as it records a migration, while the other
 * partitions of the batch may still load bytes of the layout before: each reads the file as it was at the version it
 * loads. Found by adopting a checkpoint of Spark's default provider into 5 partitions on 2 cores: the partitions that
 * loaded after partition 0's commit read their unmigrated group state as the new layout (a null string field read
 * as "").
 */
class SparkSchemaFileHistoryTest {
  private val conf = new Configuration()
  private val key = StructType.fromDDL("k STRING")
  private val (v1, v2, v3) = (StructType.fromDDL("n INT"), StructType.fromDDL("n BIGINT"),
    StructType.fromDDL("n BIGINT, note STRING"))

  @Test def eachVersionReadsTheFileAsItWasWhenItsBytesWereWritten(): Unit = {
    val root = Files.createTempDirectory("statesnap-schema-history")
    try {
      val partition3 = StateStoreId(root.toUri.toString, 0, 3)
      val partition0 = partition3.copy(partitionId = 0)
      assertEquals("no file: nothing to read any layout with", None, SparkSchemaFileHistory.at(partition3, 4, conf))
      SparkSingleStateSchemaFile.update(partition0, key, v1, conf) // Spark's, in the query's first batch
      // Partition 0 migrates to v2 as it commits version 5, later to v3 as it commits version 9.
      assertTrue(SparkSchemaFileHistory.update(partition0, key, v2, 5, conf).isDefined)
      assertEquals(None, SparkSchemaFileHistory.update(partition0, key, v2, 5, conf)) // a retry: already says v2
      assertTrue(SparkSchemaFileHistory.update(partition0, key, v3, 9, conf).isDefined)
      val read = Seq(0L, 4, 5, 8, 9, 12).map(v => v -> SparkSchemaFileHistory.at(partition3, v, conf).map(_._2))
      assertEquals(Seq(0L -> Some(v1), 4L -> Some(v1), 5L -> Some(v2), 8L -> Some(v2), 9L -> Some(v3),
        12L -> Some(v3)), read)
      assertEquals("Spark's file says the newest", Some((key, v3)), SparkSingleStateSchemaFile.read(partition3, conf))
    } finally FileUtils.deleteDirectory(root.toFile)
  }

  @Test def aFileThatDidNotExistBeforeItsFirstRewriteIsNoneBefore(): Unit = {
    val root = Files.createTempDirectory("statesnap-schema-history")
    try {
      val id = StateStoreId(root.toUri.toString, 0, 0)
      SparkSchemaFileHistory.update(id, key, v2, 3, conf)
      assertEquals(None, SparkSchemaFileHistory.at(id, 2, conf))
      assertEquals(Some((key, v2)), SparkSchemaFileHistory.at(id, 3, conf))
    } finally FileUtils.deleteDirectory(root.toFile)
  }
}
