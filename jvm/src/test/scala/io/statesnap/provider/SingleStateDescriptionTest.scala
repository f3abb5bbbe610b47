package io.statesnap.provider

import java.nio.file.Files

import io.statesnap.meaning.{KeyColumn, OperatorMeaning, RecordedMeanings}
import io.statesnap.snapshot.{OperatorKind, RowSchemaSnapshot, StateKind, StateSnapshotRecord}
import org.apache.commons.io.FileUtils
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.execution.streaming.state.{SparkSingleStateSchemaFile, StateStoreId}
import org.apache.spark.sql.types.StructType
import org.junit.Assert._
import org.junit.Test

/**
 * A single state's description as of a version, written by its store as it commits and by a key change offline
 * alike: each partition's record, and once for the operator (partition 0) its meaning and Spark's schema file; removed
 * whole with a version never committed, Spark's file saying again what it said.
 */
class SingleStateDescriptionTest {
  private val conf = new Configuration()
  private val (oldKey, newKey, value) = (StructType.fromDDL("user STRING"), StructType.fromDDL("region STRING"),
    StructType.fromDDL("count BIGINT"))
  private val meaning = OperatorMeaning("streaming aggregation", Seq(KeyColumn("region", "region", "string")), Nil)

  private def record(key: StructType) = StateSnapshotRecord("default", StateKind.Value, OperatorKind.Guarded,
    new RowSchemaSnapshot().configure(key), new RowSchemaSnapshot().configure(value), 0L, 0L)

  private def described(key: StructType) = SingleStateDescription.Described(Some(record(key)), Some(meaning),
    Some(key -> value))

  @Test def partitionZeroDescribesTheOperatorAndEveryPartitionItsRecord(): Unit = {
    val root = Files.createTempDirectory("statesnap-description")
    try {
      val stateRoot = root.toUri.toString
      val (p0, p1) = (StateStoreId(stateRoot, 0, 0), StateStoreId(stateRoot, 0, 1))
      SparkSingleStateSchemaFile.update(p0, oldKey, value, conf) // what Spark wrote with the query's first batch
      val first = SingleStateDescription.write(p1, 3, described(newKey), conf)
      assertEquals("only partition 0 describes the operator", (None, None), (first.meaning, first.sparkSchemaFile))
      assertTrue(first.record.isDefined)
      val zero = SingleStateDescription.write(p0, 3, described(newKey), conf)
      assertTrue(zero.toString, zero.meaning.isDefined && zero.record.isDefined && zero.sparkSchemaFile.isDefined)
      assertEquals(Some(meaning), RecordedMeanings.inForce(stateRoot, 0, 3, conf).map(_._2))
      assertEquals(Some((newKey, value)), SparkSingleStateSchemaFile.read(p1, conf))
      val fs = new Path(stateRoot).getFileSystem(conf)
      val dir = OperatorRecordFiles.dir(OperatorRecordFiles.root(stateRoot, 0), 1, "default")
      assertEquals(Seq(3L), OperatorRecordFiles.versions(fs, dir))

      // The version is never committed (an offline batch rolled back): every part goes, Spark's file says the old key.
      Seq(p0, p1).foreach(SingleStateDescription.remove(_, 3, conf))
      assertEquals(Nil, OperatorRecordFiles.versions(fs, dir))
      assertEquals(None, RecordedMeanings.inForce(stateRoot, 0, 3, conf))
      assertEquals(Some((oldKey, value)), SparkSingleStateSchemaFile.read(p0, conf))
    } finally FileUtils.deleteDirectory(root.toFile)
  }

  @Test def aRetriedVersionReplacesTheRecordsOfLaterOnes(): Unit = {
    val root = Files.createTempDirectory("statesnap-description")
    try {
      val id = StateStoreId(root.toUri.toString, 0, 2)
      val nothingElse = SingleStateDescription.Described(Some(record(oldKey)), None, None)
      SingleStateDescription.write(id, 7, nothingElse, conf)
      SingleStateDescription.write(id, 5, nothingElse, conf)
      val dir = OperatorRecordFiles.dir(OperatorRecordFiles.root(id.checkpointRootLocation, 0), 2, "default")
      assertEquals(Seq(5L), OperatorRecordFiles.versions(new Path(dir.toString).getFileSystem(conf), dir))
    } finally FileUtils.deleteDirectory(root.toFile)
  }
}
