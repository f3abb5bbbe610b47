package io.statesnap.snapshot

import java.io.{DataInputStream, DataOutputStream}

import io.statesnap.evolution.{CompatibilityMode, MigrationFailure, RowMigration, SchemaCompatibility, SchemaProblem}
import io.statesnap.evolution.SchemaCompatibility._
import org.apache.spark.sql.catalyst.expressions.{GenericInternalRow, UnsafeProjection, UnsafeRow}

/**
 * A snapshot of an outer layout around nested snapshots, as Flink's `CompositeTypeSerializerSnapshot`: it
 * persists its own outer version and payload plus each nested snapshot (each framed by [[SnapshotFormat]], so a
 * nested snapshot keeps its own class and version), and resolves from the nested results and its outer one:
 * any nested incompatibility makes the whole incompatible, any nested migration makes the whole migrate (through
 * [[outerMigration]]), any reconfiguration reconfigures it.
 *
 * Subclasses need a public no-argument constructor and define the outer layout.
 */
abstract class CompositeStateSerializerSnapshot extends StateSerializerSnapshot {
  private var nested: Seq[StateSerializerSnapshot] = Nil

  def nestedSnapshots: Seq[StateSerializerSnapshot] = nested

  protected def setNestedSnapshots(snapshots: Seq[StateSerializerSnapshot]): this.type = {
    nested = snapshots
    this
  }

  /** The version of the outer payload ([[writeOuterSnapshot]]); nested snapshots carry their own. */
  protected def outerVersion: Int

  protected def writeOuterSnapshot(out: DataOutputStream): Unit = ()

  protected def readOuterSnapshot(readOuterVersion: Int, in: DataInputStream): Unit = ()

  /** Whether the outer layout of `old` (same class) reads as this one; by default it does. */
  protected def resolveOuterSchemaCompatibility(old: CompositeStateSerializerSnapshot): Option[SchemaProblem] = None

  /** The serializer of the whole, given the serializers of the nested parts. */
  protected def outerSerializer(nestedSerializers: Seq[StateSerializer]): StateSerializer

  /** A migration of whole rows from migrations of the nested parts (None: that part is unchanged). */
  protected def outerMigration(old: CompositeStateSerializerSnapshot, nestedMigrations: Seq[Option[RowMigration]])
      : RowMigration

  final override def currentVersion: Int = outerVersion

  final override def writeSnapshot(out: DataOutputStream): Unit = {
    writeOuterSnapshot(out)
    out.writeInt(nested.size)
    nested.foreach { snapshot =>
      val bytes = SnapshotFormat.write(snapshot)
      out.writeInt(bytes.length)
      out.write(bytes)
    }
  }

  final override def readSnapshot(readVersion: Int, in: DataInputStream): Unit = {
    readOuterSnapshot(readVersion, in)
    nested = Seq.fill(Checksummed.length(in, "nested snapshot count", minBytesEach = 4)) {
      SnapshotFormat.read(Checksummed.bytes(in, "nested snapshot"))
    }
  }

  override def restoreSerializer(): StateSerializer = outerSerializer(nested.map(_.restoreSerializer()))

  final override def resolveSchemaCompatibility(oldSnapshot: StateSerializerSnapshot): SchemaCompatibility =
    resolveSchemaCompatibility(oldSnapshot, ResolutionContext.Empty)

  /** The nested snapshots resolve with the same context: the history and mode are those of the user's value. */
  final override def resolveSchemaCompatibility(oldSnapshot: StateSerializerSnapshot, context: ResolutionContext)
      : SchemaCompatibility =
    oldSnapshot match {
      case old: CompositeStateSerializerSnapshot if old.getClass == getClass && old.nested.size == nested.size =>
        resolveOuterSchemaCompatibility(old) match {
          case Some(problem) => Incompatible(Seq(problem))
          case None =>
            val results = nested.zip(old.nested).map { case (n, o) => n.resolveSchemaCompatibility(o, context) }
            val problems = results.collect { case Incompatible(p) => p }.flatten
            if (problems.nonEmpty) Incompatible(problems)
            else if (results.exists(_.isInstanceOf[CompatibleAfterMigration])) {
              CompatibleAfterMigration(outerMigration(old, results.map {
                case CompatibleAfterMigration(m) => Some(m)
                case _ => None
              }))
            } else if (results.forall(_ == CompatibleAsIs)) CompatibleAsIs
            else CompatibleWithReconfiguredSerializer
        }
      case other => StateSerializerSnapshot.differentKinds(other, this)
    }

  override def declaredCompatibility: Option[CompatibilityMode] = nested.flatMap(_.declaredCompatibility).headOption

  override def equals(other: Any): Boolean = other match {
    case o: CompositeStateSerializerSnapshot => o.getClass == getClass && o.nestedSnapshots == nested
    case _ => false
  }

  override def hashCode(): Int = (getClass, nested).hashCode()

  override def toString: String = s"${getClass.getSimpleName}(${nested.mkString(", ")})"
}

/**
 * A composite around exactly one nested snapshot, the user's value, in a layout Spark adds to it (TTL, an
 * arbitrary-state operator's group state): history, rollbacks and modes are about that user value.
 */
abstract class UserValueWrapper extends CompositeStateSerializerSnapshot {
  def userValueSnapshot: StateSerializerSnapshot = nestedSnapshots.head

  /** The field of Spark's layout (ordinal 0) that holds the user value, as change lists name it. */
  protected def userValueField: String

  /**
   * Spark's whole layout migrates by the user value's migration at ordinal 0 (a null one stays null); every other
   * field (the TTL expiry, the timeout) is copied as it was, so it takes effect as it would have. The user value is
   * the only part: resolution asks for a migration only when it has one.
   */
  override protected def outerMigration(old: CompositeStateSerializerSnapshot, nested: Seq[Option[RowMigration]])
      : RowMigration = wrappedMigration(nested.head.get)

  private def wrappedMigration(user: RowMigration): RowMigration = new RowMigration {
    private val fields = restoreSerializer().schema.fields.map(_.dataType)
    private val write = UnsafeProjection.create(fields)
    private val row = new GenericInternalRow(fields.length)
    override val oldFieldCount: Int = fields.length
    override val changes: Seq[String] = user.changes.map(c => s"$userValueField: $c")
    override def migrate(oldRow: UnsafeRow): UnsafeRow = {
      row.update(0, if (oldRow.isNullAt(0)) null else user.migrate(userValue(oldRow)))
      var i = 1
      while (i < fields.length) { row.update(i, oldRow.get(i, fields(i))); i += 1 }
      write(row)
    }
    override def diagnose(oldRow: UnsafeRow): MigrationFailure = user.diagnose(userValue(oldRow).copy())
    /** The user value of `oldRow`, in a row reused for every entry (`getStruct` would allocate one per entry). */
    private val userOld = new UnsafeRow(user.oldFieldCount)
    private def userValue(oldRow: UnsafeRow): UnsafeRow = {
      val offsetAndSize = oldRow.getLong(0)
      userOld.pointTo(oldRow.getBaseObject, oldRow.getBaseOffset + (offsetAndSize >>> 32), offsetAndSize.toInt)
      userOld
    }
  }
}
