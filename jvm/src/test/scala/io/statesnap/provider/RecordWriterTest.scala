package io.statesnap.provider

import java.nio.file.Files

import org.apache.commons.io.FileUtils
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.types.StructType
import org.junit.Assert._
import org.junit.Test

import io.statesnap.snapshot.{RecordFamily, StateSnapshotRecord}

/**
 * The one writer of records: what a key change records (the record family's value offline, a file beside a store)
 * is what a store then reads back, the old record in its history, each in force from the version it names.
 */
class RecordWriterTest {
  private val (key, value) = (StructType.fromDDL("k STRING"), StructType.fromDDL("n BIGINT"))
  private val recorded = GuardedState.record("default", key, value, 3)

  @Test def aRekeyedRecordSaysTheNewKeyFromItsVersionAndKeepsTheOldInItsHistory(): Unit = {
    val newKey = StructType.fromDDL("k STRING, region STRING")
    val rekeyed = RecordWriter.rekeyed(recorded, newKey, None, 7)
    assertEquals(newKey, StateDecision.schemaOf(rekeyed.keySnapshot))
    assertEquals("values stay unless the change merges them", value, StateDecision.schemaOf(rekeyed.valueSnapshot))
    assertEquals(7L, rekeyed.recordedAtVersion)
    assertEquals(Seq(3L), rekeyed.history.map(_.recordedAtVersion))
    assertEquals(recorded.describe, rekeyed.history.head.description)
    val merged = StructType.fromDDL("n BIGINT, m BIGINT")
    assertEquals(merged, StateDecision.schemaOf(RecordWriter.rekeyed(recorded, newKey, Some(merged), 7).valueSnapshot))
  }

  @Test def aRecordFileIsReadBackInForceFromTheVersionItWasWrittenFor(): Unit = {
    val root = Files.createTempDirectory("statesnap-record-writer")
    try {
      val dir = new Path(root.toUri.toString, "0-default")
      val conf = new Configuration()
      RecordWriter.toFile(OperatorRecordFiles.file(dir, 5), recorded, 5, conf)
      val fs = dir.getFileSystem(conf)
      val legacy = new Path(dir, "none")
      assertEquals(None, OperatorRecordFiles.inForce(fs, dir, legacy, 4))
      val read = OperatorRecordFiles.read(fs, OperatorRecordFiles.inForce(fs, dir, legacy, 9).get)
      assertEquals(5L, read.recordedAtVersion)
      assertEquals(recorded.copy(recordedAtVersion = 5, recordedAtMillis = read.recordedAtMillis), read)
    } finally FileUtils.deleteDirectory(root.toFile)
  }

  @Test def theRecordFamilysValueHoldsTheRecordsBytes(): Unit = {
    val row = RecordWriter.familyValue(recorded)
    assertEquals(RecordFamily.ValueSchema.length, row.numFields)
    assertEquals(recorded, StateSnapshotRecord.fromBytes(row.getBinary(0)))
  }
}
