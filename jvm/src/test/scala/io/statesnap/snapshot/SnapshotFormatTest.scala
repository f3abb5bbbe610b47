package io.statesnap.snapshot

import io.statesnap.evolution.SchemaCompatibility._
import org.apache.spark.sql.types.StructType
import org.junit.Assert._
import org.junit.Test

/** Lacks the no-argument constructor restore needs. */
class NoDefaultConstructorSnapshot(schema: StructType) extends RowSchemaSnapshot {
  configure(schema)
}

class SnapshotFormatTest {
  private val schema = StructType.fromDDL("id STRING NOT NULL, amount BIGINT, tags ARRAY<STRING>")

  private def row(schema: StructType, version: Int = 0) = new RowSchemaSnapshot().configure(schema, version)

  private def assertRefused(bytes: Array[Byte], expected: String): Unit = {
    val e = assertThrows(classOf[SnapshotFormatException], () => SnapshotFormat.read(bytes))
    assertTrue(s"'${e.getMessage}' should mention '$expected'", e.getMessage.contains(expected))
  }

  @Test def rowSnapshotRoundTrips(): Unit = {
    val restored = SnapshotFormat.read(SnapshotFormat.write(row(schema)))
    assertEquals(row(schema), restored)
    assertEquals(UnsafeRowSerializer(schema), restored.restoreSerializer())
  }

  @Test def bytesStartWithMagicAndFormatVersion(): Unit = {
    val bytes = SnapshotFormat.write(row(schema))
    assertEquals("SSNP", new String(bytes.take(4), "US-ASCII"))
    assertEquals(Seq[Byte](0, 0, 0, 1), bytes.slice(4, 8).toSeq)
  }

  @Test def recordRoundTripsBothSnapshots(): Unit = {
    val first = StateSnapshotRecord("testState", StateKind.Map, OperatorKind.TransformWithState,
      row(StructType.fromDDL("k STRING")), row(schema), 12L, 1234567L)
    val record = first.succeededBy(first.copy(valueSnapshot = row(schema, 2), recordedAtVersion = 14L))
    assertEquals(record, StateSnapshotRecord.fromBytes(record.toBytes))
    assertEquals(Seq(12L), record.history.map(_.recordedAtVersion))
    assertTrue(record.history.head.description.contains("map state"))
  }

  @Test def recordKeepsEachEarlierSchemaAndTheCompatibilityMode(): Unit = {
    import io.statesnap.evolution.{CompatibilityMode, RecordedSchema}
    val first = StateSnapshotRecord("s", StateKind.Value, OperatorKind.Aggregation, row(StructType.fromDDL("k STRING")),
      new TtlValueSnapshot(row(StructType.fromDDL("a INT"), 1)), 3L, 1L)
    val next = first.succeededBy(first.copy(valueSnapshot = row(schema, 2), recordedAtVersion = 9L,
      compatibility = Some(CompatibilityMode.ForwardTransitive)))
    val restored = StateSnapshotRecord.fromBytes(next.toBytes)
    assertEquals(next, restored)
    assertEquals(Seq(RecordedSchema(1, StructType.fromDDL("a INT"))), restored.earlierSchemas)
    assertEquals(Some(CompatibilityMode.ForwardTransitive), restored.compatibility)
    assertEquals(OperatorKind.Aggregation, restored.operator)
  }

  @Test def aRecordFromBeforeOperatorKindsGetsTheKindItsContentsSay(): Unit = {
    def formatTwo(name: String, value: StateSerializerSnapshot) = Checksummed.write(StateSnapshotRecord.Magic, 2) {
      out =>
        out.writeUTF(name); out.writeUTF("value"); out.writeLong(4); out.writeLong(5)
        Seq(row(StructType.fromDDL("k STRING")), value).map(SnapshotFormat.write).foreach { b =>
          out.writeInt(b.length); out.write(b)
        }
        out.writeUTF(""); out.writeInt(0)
    }
    def operatorOf(name: String, value: StateSerializerSnapshot) =
      StateSnapshotRecord.fromBytes(formatTwo(name, value)).operator
    assertEquals(OperatorKind.ArbitraryState, operatorOf("groupState", new GroupStateSnapshot(row(schema), false)))
    assertEquals(OperatorKind.Aggregation, operatorOf("aggregation", row(schema)))
    assertEquals(OperatorKind.TransformWithState, operatorOf("counts", row(schema)))
  }

  @Test def recordFormatVersionOneIsStillRead(): Unit = {
    val v1 = Checksummed.write(StateSnapshotRecord.Magic, 1) { out =>
      out.writeUTF("s"); out.writeUTF("list"); out.writeLong(4); out.writeLong(5)
      Seq(row(StructType.fromDDL("k STRING")), row(schema)).map(SnapshotFormat.write).foreach { b =>
        out.writeInt(b.length); out.write(b)
      }
      out.writeInt(1); out.writeLong(2); out.writeLong(3)
      val text = "list state, earlier".getBytes("UTF-8")
      out.writeInt(text.length); out.write(text)
    }
    val restored = StateSnapshotRecord.fromBytes(v1)
    assertEquals((StateKind.List, None, Seq(None)), (restored.kind, restored.compatibility, restored.history.map(_.schema)))
    assertEquals("list state, earlier", restored.history.head.description)
  }

  @Test def flippedByteIsReportedAsCorrupt(): Unit = {
    val bytes = SnapshotFormat.write(row(schema))
    bytes(bytes.length / 2) = (bytes(bytes.length / 2) ^ 0x40).toByte
    assertRefused(bytes, "checksum does not match")
  }

  @Test def foreignBytesAreReportedAsCorrupt(): Unit = {
    assertRefused("not a snapshot at all".getBytes("UTF-8"), "magic bytes")
  }

  @Test def newerSnapshotVersionIsRefused(): Unit = {
    // A RowSchemaSnapshot payload stamped with a version this code has never written.
    val future = Checksummed.write(SnapshotFormat.Magic, 1) { out =>
      out.writeUTF(classOf[RowSchemaSnapshot].getName)
      out.writeInt(99)
      val payload = Checksummed.bytesOf(row(schema).writeSnapshot)
      out.writeInt(payload.length)
      out.write(payload)
    }
    assertRefused(future, "written by a newer statesnap")
  }

  @Test def newerFormatVersionIsRefused(): Unit = {
    val future = Checksummed.write(SnapshotFormat.Magic, 2)(_.writeUTF("whatever"))
    assertRefused(future, "format version 2")
  }

  @Test def unknownClassIsNamed(): Unit = {
    val bytes = Checksummed.write(SnapshotFormat.Magic, 1) { out =>
      out.writeUTF("com.example.GoneSnapshot"); out.writeInt(1); out.writeInt(0)
    }
    assertRefused(bytes, "com.example.GoneSnapshot is not on the classpath")
  }

  @Test def classWithoutNoArgConstructorIsNamed(): Unit = {
    val bytes = SnapshotFormat.write(new NoDefaultConstructorSnapshot(schema))
    assertRefused(bytes, "has no public no-argument constructor")
  }

  @Test def truncatedPayloadIsCorrupt(): Unit = {
    val bytes = Checksummed.write(SnapshotFormat.Magic, 1) { out =>
      out.writeUTF(classOf[RowSchemaSnapshot].getName); out.writeInt(1); out.writeInt(1000)
    }
    assertRefused(bytes, "a payload length of 1000 is corrupt: 0 bytes are left") // before it allocates
    assertRefused(bytes.take(bytes.length - 6) ++ bytes.takeRight(4).map(_ => 0.toByte), "checksum")
  }

  @Test def resolutionGivesTheFourOutcomes(): Unit = {
    val old = row(StructType.fromDDL("a INT NOT NULL"))
    def resolve(ddl: String) = row(StructType.fromDDL(ddl)).resolveSchemaCompatibility(old)
    assertEquals(CompatibleAsIs, resolve("a INT NOT NULL"))
    assertTrue(resolve("a INT") == CompatibleWithReconfiguredSerializer)
    assertTrue(resolve("a BIGINT").isInstanceOf[CompatibleAfterMigration])
    assertTrue(resolve("a SHORT").isInstanceOf[Incompatible])
  }
}
