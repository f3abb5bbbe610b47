package io.statesnap.tools

import java.io.{ByteArrayInputStream, ByteArrayOutputStream}

import org.junit.Assert._
import org.junit.Test

class EntrySerializerTest {
  private type Entry = (EntrySerializer.Key, Array[Byte])

  private def written(entries: Seq[Entry]): Array[Byte] = {
    val bytes = new ByteArrayOutputStream
    val out = new EntrySerializer().newInstance().serializeStream(bytes)
    entries.foreach { case (key, value) => out.writeKey(key); out.writeValue(value) }
    out.close()
    bytes.toByteArray
  }

  private def read(bytes: Array[Byte]): Seq[Entry] = new EntrySerializer().newInstance()
    .deserializeStream(new ByteArrayInputStream(bytes)).asKeyValueIterator
    .map { case (key, value) => key.asInstanceOf[EntrySerializer.Key] -> value.asInstanceOf[Array[Byte]] }.toList

  private def same(a: Seq[Entry], b: Seq[Entry]): Boolean = a.size == b.size && a.zip(b).forall {
    case (((t1, f1, k1), v1), ((t2, f2, k2), v2)) => t1 == t2 && f1 == f2 && k1.sameElements(k2) &&
      v1.sameElements(v2)
  }

  @Test def readsBackEveryEntryAsWrittenAndStopsAtTheEnd(): Unit = {
    val entries = Seq((0, 0, Array[Byte](0, 1, 2)) -> Array[Byte](9), (4, 2, Array.emptyByteArray) ->
      Array.emptyByteArray, (Int.MaxValue, 5, Array.fill[Byte](70000)(-1)) -> Array.fill[Byte](3)(7))
    assertTrue(same(entries, read(written(entries))))
    assertTrue(read(written(Nil)).isEmpty)
  }

  @Test def aTruncatedStreamIsAnErrorNotAShorterOne(): Unit = {
    val bytes = written(Seq((1, 3, Array[Byte](1, 2, 3)) -> Array[Byte](4, 5)))
    // Cut inside the value, the key or before the family: Spark's iterator would end quietly at an EOFException,
    // losing the entry.
    Seq(1, 4, bytes.length - 8, bytes.length - 4).foreach { cut =>
      assertThrows(classOf[IllegalStateException], () => read(bytes.dropRight(cut)))
    }
  }
}
