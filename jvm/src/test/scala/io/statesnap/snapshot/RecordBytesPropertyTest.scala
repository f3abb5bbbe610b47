package io.statesnap.snapshot

import java.io.{ByteArrayOutputStream, DataOutputStream}
import java.util.zip.CRC32

import scala.util.Random

import io.statesnap.evolution.CompatibilityMode
import org.apache.spark.sql.types.StructType
import org.junit.Assert._
import org.junit.Test

/** Set by [[InitProbe]]'s initializer: whether reading a record ran code of a class it names. */
object InitFlag {
  @volatile var initialized = false
}

/** A class whose initializer has a side effect (a Scala object's body runs in its class's static initializer). */
object InitProbe {
  InitFlag.initialized = true
}

/**
 * Bytes that the checksum vouches for are still input (issue 24): every mutation of a real state record and of a
 * serializer snapshot, checksum made valid again or not, reads cleanly or fails with SnapshotFormatException, and
 * nothing is allocated beyond the bytes left (`make test` runs JUnit with a 512 MB heap, where a length field of
 * 2^31 would fail with OutOfMemoryError before the read). Seeded, so a failure names a reproducible case.
 */
class RecordBytesPropertyTest {
  private val cases = 3000
  private val schema = StructType.fromDDL("id STRING NOT NULL, amount BIGINT, tags ARRAY<STRING>")
  private val definition = SnapshotDefinition.parse("orders", """{"version": 3, "compatibility": "FULL", "steps": [
      {"version": 2, "schema": {"type": "struct", "fields": [{"name": "amt", "type": "long", "nullable": true,
      "metadata": {}}]}, "renamed": {"amount": "amt"}}, {"version": 3, "defaults": {"tags": "array('x')"},
      "dropped": ["old"]}]}""")

  private def record: StateSnapshotRecord = {
    val value = new TtlValueSnapshot(definition.snapshotFor(schema))
    val first = StateSnapshotRecord("orders", StateKind.Map, OperatorKind.TransformWithState,
      new RowSchemaSnapshot().configure(StructType.fromDDL("k STRING")),
      new GroupStateSnapshot(new RowSchemaSnapshot().configure(StructType.fromDDL("a INT"), 1), true), 3L, 1L)
    first.succeededBy(first.copy(valueSnapshot = value, recordedAtVersion = 9L,
      compatibility = Some(CompatibilityMode.Full)))
  }

  /** A checksum-valid (or, every fourth case, corrupt) mutation: byte flips, extreme length fields, truncations. */
  private def mutate(bytes: Array[Byte], random: Random): (String, Array[Byte]) = {
    val body = bytes.dropRight(4)
    val (what, mutated) = random.nextInt(4) match {
      case 0 =>
        val at = random.nextInt(body.length)
        val b = body.clone()
        b(at) = random.nextInt(256).toByte
        (s"byte $at := ${b(at)}", b)
      case 1 =>
        val at = random.nextInt(body.length - 3)
        val n = Seq(Int.MaxValue, Int.MinValue, -1, 0, 1 << 30, body.length, body.length - at)(random.nextInt(7))
        val b = body.clone()
        Seq(24, 16, 8, 0).zipWithIndex.foreach { case (shift, i) => b(at + i) = (n >>> shift).toByte }
        (s"int at $at := $n", b)
      case 2 =>
        val end = random.nextInt(body.length)
        (s"truncated at $end", body.take(end))
      case _ =>
        val b = body.clone()
        (0 until 3).foreach(_ => b(random.nextInt(b.length)) = random.nextInt(256).toByte)
        ("three bytes", b)
    }
    if (random.nextInt(4) == 0) (s"$what, old checksum", mutated ++ bytes.takeRight(4))
    else (what, mutated ++ crcOf(mutated))
  }

  private def crcOf(bytes: Array[Byte]): Array[Byte] = {
    val crc = new CRC32()
    crc.update(bytes)
    val out = new ByteArrayOutputStream()
    new DataOutputStream(out).writeInt(crc.getValue.toInt)
    out.toByteArray
  }

  /** Every mutation of `bytes` is read by `read` or refused with SnapshotFormatException; the others, described. */
  private def escapes(bytes: Array[Byte], seed: Long)(read: Array[Byte] => Any): Seq[String] = {
    val random = new Random(seed)
    (1 to cases).flatMap { i =>
      val (what, mutated) = mutate(bytes, random)
      try { read(mutated); None } catch {
        case _: SnapshotFormatException => None
        case e: Throwable => Some(s"case $i ($what): ${e.getClass.getName}: ${e.getMessage}")
      }
    }
  }

  @Test def everyMutationOfAStateRecordIsReadOrRefusedWithOneError(): Unit = {
    val bytes = record.toBytes
    assertEquals(record, StateSnapshotRecord.fromBytes(bytes))
    val escaped = escapes(bytes, seed = 24L)(StateSnapshotRecord.fromBytes)
    assertTrue(escaped.take(10).mkString("\n"), escaped.isEmpty)
  }

  @Test def everyMutationOfASerializerSnapshotIsReadOrRefusedWithOneError(): Unit = {
    val bytes = SnapshotFormat.write(new TtlValueSnapshot(definition.snapshotFor(schema)))
    val escaped = escapes(bytes, seed = 18L)(SnapshotFormat.read(_))
    assertTrue(escaped.take(10).mkString("\n"), escaped.isEmpty)
  }

  @Test def aLengthBeyondTheBytesLeftIsRefusedBeforeItAllocates(): Unit = {
    val huge = Checksummed.write(SnapshotFormat.Magic, SnapshotFormat.FormatVersion) { out =>
      out.writeUTF(classOf[RowSchemaSnapshot].getName); out.writeInt(1); out.writeInt(Int.MaxValue)
    }
    val e = assertThrows(classOf[SnapshotFormatException], () => SnapshotFormat.read(huge))
    assertTrue(e.getMessage, e.getMessage.contains(s"a payload length of ${Int.MaxValue} is corrupt: 0 bytes are left"))
  }

  @Test def aClassARecordNamesRunsNoCodeUnlessItIsASnapshotClass(): Unit = {
    val named = Checksummed.write(SnapshotFormat.Magic, SnapshotFormat.FormatVersion) { out =>
      out.writeUTF("io.statesnap.snapshot.InitProbe$"); out.writeInt(1); out.writeInt(0) // named, never touched
    }
    val e = assertThrows(classOf[SnapshotFormatException], () => SnapshotFormat.read(named))
    assertTrue(e.getMessage, e.getMessage.contains(s"is not a ${classOf[StateSerializerSnapshot].getName}"))
    assertFalse("the named class's initializer ran", InitFlag.initialized)
  }
}
