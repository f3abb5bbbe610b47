package io.statesnap.tools

import io.statesnap.StatesnapErrors

import java.io.{DataInputStream, DataOutputStream, EOFException, InputStream, OutputStream}
import java.nio.ByteBuffer

import scala.reflect.ClassTag

import org.apache.spark.serializer.{DeserializationStream, SerializationStream, Serializer, SerializerInstance}

/**
 * The serializer of [[RepartitionJob]]'s shuffle, whose records are an entry's target, family and key, then its
 * value: `[int target][int family][int length][key][int length][value]`, nothing else. Kryo, for the same record,
 * tracked every array for references and wrote its class: about a fifth of the job's time on 2 cores (`make bench`'s
 * repartition).
 * Spark's shuffle writes a record's key and value through `writeKey` and `writeValue` and reads them back through
 * `asKeyValueIterator`, spilled or not; nothing else of it is used. A stream that ends inside a record is an error,
 * not a shorter stream.
 */
private[tools] final class EntrySerializer extends Serializer with Serializable {
  override def newInstance(): SerializerInstance = new SerializerInstance {
    override def serialize[T: ClassTag](t: T): ByteBuffer = unsupported
    override def deserialize[T: ClassTag](bytes: ByteBuffer): T = unsupported
    override def deserialize[T: ClassTag](bytes: ByteBuffer, loader: ClassLoader): T = unsupported

    override def serializeStream(s: OutputStream): SerializationStream = new SerializationStream {
      private val out = new DataOutputStream(s)
      override def writeKey[T: ClassTag](key: T): SerializationStream = {
        val (target, family, bytes) = key.asInstanceOf[EntrySerializer.Key]
        out.writeInt(target)
        out.writeInt(family)
        writeBytes(bytes)
      }
      override def writeValue[T: ClassTag](value: T): SerializationStream = writeBytes(value.asInstanceOf[Array[Byte]])
      override def writeObject[T: ClassTag](t: T): SerializationStream = unsupported
      override def flush(): Unit = out.flush()
      override def close(): Unit = out.close()

      private def writeBytes(bytes: Array[Byte]): SerializationStream = {
        out.writeInt(bytes.length)
        out.write(bytes)
        this
      }
    }

    override def deserializeStream(s: InputStream): DeserializationStream = new DeserializationStream {
      private val in = new DataInputStream(s)
      // An EOFException ends Spark's iteration of the records: only where the next record would start.
      override def readKey[T: ClassTag](): T = {
        val target = in.readInt()
        (target, whole(in.readInt()), whole(readBytes())).asInstanceOf[T]
      }
      override def readValue[T: ClassTag](): T = whole(readBytes()).asInstanceOf[T]
      override def readObject[T: ClassTag](): T = unsupported
      override def close(): Unit = in.close()

      private def readBytes(): Array[Byte] = {
        val length = in.readInt()
        if (length < 0) throw StatesnapErrors.internal(s"a record of statesnap's shuffle with length $length")
        val bytes = new Array[Byte](length)
        in.readFully(bytes)
        bytes
      }

      private def whole[T](read: => T): T = try read catch {
        case e: EOFException => throw StatesnapErrors.internal("statesnap's shuffle ends inside a record", e)
      }
    }
  }

  private def unsupported: Nothing =
    throw StatesnapErrors.internal("statesnap's shuffle serializer writes keys and values only")
}

private[tools] object EntrySerializer {
  /** A record's key: the index of the store it is written to, the index of its family in that store, its key. */
  type Key = (Int, Int, Array[Byte])
}
