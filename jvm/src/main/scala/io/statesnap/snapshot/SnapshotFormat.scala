package io.statesnap.snapshot

import java.io._
import java.util.zip.CRC32

import scala.util.control.NonFatal

/**
 * The persisted form of a [[StateSerializerSnapshot]] (documented in docs/snapshot-format.md):
 * {{{
 *   "SSNP" | format version: int | snapshot class name: writeUTF | snapshot version: int
 *          | payload length: int | payload | CRC32 of everything before: int
 * }}}
 * No Java serialization: a snapshot is restored by instantiating its class through its public no-argument
 * constructor and handing it the payload with the version it was written with (as Flink does).
 */
object SnapshotFormat {
  val Magic: Array[Byte] = "SSNP".getBytes("US-ASCII")
  val FormatVersion = 1

  def write(snapshot: StateSerializerSnapshot): Array[Byte] = {
    val payload = Checksummed.bytesOf(snapshot.writeSnapshot)
    Checksummed.write(Magic, FormatVersion) { out =>
      out.writeUTF(snapshot.getClass.getName)
      out.writeInt(snapshot.currentVersion)
      out.writeInt(payload.length)
      out.write(payload)
    }
  }

  /** Restores a snapshot, or throws [[SnapshotFormatException]] saying exactly what is wrong with the bytes. */
  def read(bytes: Array[Byte], classLoader: ClassLoader = defaultClassLoader): StateSerializerSnapshot =
    Checksummed.read(bytes, Magic, FormatVersion, "serializer snapshot") { in =>
      val className = in.readUTF()
      val version = in.readInt()
      val payload = Checksummed.bytes(in, "payload")
      val snapshot = instantiate(className, classLoader)
      if (version > snapshot.currentVersion) {
        throw new SnapshotFormatException(s"the snapshot was written by a newer statesnap: $className version " +
          s"$version, but this code reads versions up to ${snapshot.currentVersion}. Upgrade statesnap on the " +
          "cluster (or restart the application version that wrote it)")
      }
      snapshot.readSnapshot(version, new DataInputStream(new ByteArrayInputStream(payload)))
      snapshot
    }

  private def defaultClassLoader: ClassLoader =
    Option(Thread.currentThread().getContextClassLoader).getOrElse(getClass.getClassLoader)

  private def instantiate(className: String, classLoader: ClassLoader): StateSerializerSnapshot =
    SnapshotClasses.instantiate(className, classOf[StateSerializerSnapshot], classLoader) {
      case SnapshotClasses.NotOnClasspath => new SnapshotFormatException(s"snapshot class $className is not on " +
        "the classpath. Add the jar that defines it to spark.jars (it wrote this state)")
      case SnapshotClasses.WrongBase => new SnapshotFormatException(
        s"$className is not a ${classOf[StateSerializerSnapshot].getName}")
      case SnapshotClasses.NoNullaryConstructor => new SnapshotFormatException(s"snapshot class $className has no " +
        "public no-argument constructor, which statesnap needs to restore it. Add one")
      case SnapshotClasses.CannotLoad(why) => new SnapshotFormatException(s"snapshot class $className cannot be " +
        s"loaded: $why")
    }
}

/**
 * Snapshot classes are instantiated by name through their public no-argument constructor, both to restore a
 * persisted snapshot and to attach a user's class to a state: one place for the checks, each caller words them.
 */
private[statesnap] object SnapshotClasses {
  sealed trait Failure
  case object NotOnClasspath extends Failure
  case object WrongBase extends Failure
  case object NoNullaryConstructor extends Failure
  /** The class is there but cannot be linked or initialized. */
  final case class CannotLoad(why: String) extends Failure

  /**
   * The class is loaded without being initialized and checked to be a `base` before anything of it runs: a name
   * in a record is input, and the static initializer of an arbitrary class is code.
   */
  def instantiate[T](className: String, base: Class[T], classLoader: ClassLoader)
      (refuse: Failure => Exception): T = {
    val cls = try Class.forName(className, false, classLoader) catch {
      case _: ClassNotFoundException => throw refuse(NotOnClasspath)
      case e: LinkageError => throw refuse(CannotLoad(e.toString))
    }
    if (!base.isAssignableFrom(cls)) throw refuse(WrongBase)
    val constructor = try cls.getConstructor() catch {
      case _: NoSuchMethodException => throw refuse(NoNullaryConstructor)
    }
    try base.cast(constructor.newInstance()) catch {
      case e: LinkageError => throw refuse(CannotLoad(e.toString))
      case e: java.lang.reflect.InvocationTargetException => throw refuse(CannotLoad(String.valueOf(e.getCause)))
      case e: ReflectiveOperationException => throw refuse(CannotLoad(e.toString))
    }
  }
}

/** The bytes of a snapshot cannot be restored; the message says why and what to do. */
final class SnapshotFormatException(message: String, cause: Throwable = null) extends IOException(message, cause)

/** Framing shared by every statesnap record: magic, format version, body, CRC32 of all that. */
private[statesnap] object Checksummed {
  def bytesOf(body: DataOutputStream => Unit): Array[Byte] = {
    val buffer = new ByteArrayOutputStream()
    val out = new DataOutputStream(buffer)
    body(out)
    out.flush()
    buffer.toByteArray
  }

  def write(magic: Array[Byte], formatVersion: Int)(body: DataOutputStream => Unit): Array[Byte] = {
    val framed = bytesOf { out => out.write(magic); out.writeInt(formatVersion); body(out) }
    framed ++ bytesOf(_.writeInt(crc(framed, framed.length)))
  }

  def read[T](bytes: Array[Byte], magic: Array[Byte], maxFormatVersion: Int, what: String)
      (body: DataInputStream => T): T = readVersioned(bytes, magic, maxFormatVersion, what)((_, in) => body(in))

  /** As [[read]], handing the body the format version the bytes were written with. */
  def readVersioned[T](bytes: Array[Byte], magic: Array[Byte], maxFormatVersion: Int, what: String)
      (body: (Int, DataInputStream) => T): T = {
    if (bytes.length < magic.length + 8 || !bytes.take(magic.length).sameElements(magic)) {
      throw new SnapshotFormatException(s"the $what is corrupt: it does not start with the statesnap magic bytes")
    }
    val bodyLength = bytes.length - 4
    val stored = new DataInputStream(new ByteArrayInputStream(bytes, bodyLength, 4)).readInt()
    if (stored != crc(bytes, bodyLength)) {
      throw new SnapshotFormatException(s"the $what is corrupt: its checksum does not match its bytes")
    }
    val in = new DataInputStream(new ByteArrayInputStream(bytes, magic.length, bodyLength - magic.length))
    val formatVersion = in.readInt()
    if (formatVersion > maxFormatVersion) {
      throw new SnapshotFormatException(s"the $what has format version $formatVersion, newer than the " +
        s"$maxFormatVersion this statesnap reads. Upgrade statesnap on the cluster")
    }
    // Whatever the body's parsers raise on bytes the checksum vouches for (a bug, a tool, a hand edit) is this one
    // error: a record is input.
    try body(formatVersion, in) catch {
      case e: SnapshotFormatException => throw e
      case e: EOFException => throw new SnapshotFormatException(s"the $what is corrupt: it ends early", e)
      case NonFatal(e) => throw new SnapshotFormatException(s"the $what is corrupt: $e", e)
    }
  }

  /**
   * A length read from a record's body, refused unless `minBytesEach` bytes per unit are left: a corrupt length must
   * fail before it allocates, not after. The streams statesnap reads records from know exactly what is left.
   */
  def length(in: DataInputStream, what: String, minBytesEach: Int = 1): Int = {
    val n = in.readInt()
    if (n < 0 || n.toLong * minBytesEach > in.available()) {
      throw new SnapshotFormatException(s"a $what length of $n is corrupt: ${in.available()} bytes are left")
    }
    n
  }

  /** A length-prefixed byte array of a record's body (see [[length]]). */
  def bytes(in: DataInputStream, what: String): Array[Byte] = {
    val bytes = new Array[Byte](length(in, what))
    in.readFully(bytes)
    bytes
  }

  private def crc(bytes: Array[Byte], length: Int): Int = {
    val c = new CRC32()
    c.update(bytes, 0, length)
    c.getValue.toInt
  }
}
