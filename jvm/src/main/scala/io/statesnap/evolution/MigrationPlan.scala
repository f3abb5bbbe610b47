package io.statesnap.evolution

import org.apache.spark.sql.catalyst.expressions.{Expression, Literal}
import org.apache.spark.sql.types.{DataType, StructField, StructType}

/**
 * The typed plan of a state schema change: for every field of the new schema, exactly one source. Whether the
 * bytes can stay as they are, must be rewritten, or cannot be read is derived from this structure, never from
 * the words that describe it.
 */
sealed trait FieldSource

object FieldSource {
  /**
   * An old field: `ordinals` lead from the old struct the enclosing scope reads (the state's value, or one array
   * element or map value) to the field, through structs only; its value is converted by `conversion`.
   */
  final case class FromOld(ordinals: Seq[Int], oldPath: String, oldType: DataType, conversion: Conversion)
    extends FieldSource

  /** A constant for entries written before the field existed, already cast to the field's type. */
  final case class Default(sql: String, value: Literal) extends FieldSource

  /** A SQL expression over the old row (top-level fields), already cast to the field's type. */
  final case class Derived(sql: String, expression: Expression) extends FieldSource

  /** Nothing: entries written before the field existed read null. */
  case object Null extends FieldSource
}

/** How an old value of one type becomes a value of the new type. */
sealed trait Conversion {
  /** Whether the old bytes already are the new value's bytes. */
  def preservesLayout: Boolean
}

object Conversion {
  /** The same type, up to nullability and field metadata: the same bytes. */
  case object Identity extends Conversion { def preservesLayout = true }

  /** A lossless cast (see [[Conversions.isLossless]]). */
  final case class Cast(from: DataType, to: DataType) extends Conversion { def preservesLayout = false }

  /** A struct rebuilt field by field. */
  final case class Struct(plan: StructPlan) extends Conversion { def preservesLayout: Boolean = plan.preservesLayout }

  /** Every element converted; the element is the scope of the rules inside it. */
  final case class Array(element: Conversion) extends Conversion {
    def preservesLayout: Boolean = element.preservesLayout
  }

  /** Every map value converted (keys never change); the value is the scope of the rules inside it. */
  final case class MapValues(value: Conversion) extends Conversion {
    def preservesLayout: Boolean = value.preservesLayout
  }
}

final case class FieldPlan(path: String, field: StructField, source: FieldSource)

/** One struct of the new schema, built from an old struct of `oldFieldCount` fields whose ordinals are `at`. */
final case class StructPlan(at: Seq[Int], oldFieldCount: Int, fields: Seq[FieldPlan]) {
  /** The same fields at the same positions, each from the old field at its own position, converted in place. */
  def preservesLayout: Boolean = fields.size == oldFieldCount && fields.zipWithIndex.forall {
    case (FieldPlan(_, _, FieldSource.FromOld(ordinals, _, _, conversion)), i) =>
      ordinals == at :+ i && conversion.preservesLayout
    case _ => false
  }
}

/** One thing a plan does, in words for logs, tools and errors. */
sealed trait Change {
  def describe: String
}

object Change {
  final case class Renamed(path: String, from: String) extends Change {
    def describe = s"rename '$from' to '$path'"
  }
  final case class Converted(path: String, from: DataType, to: DataType) extends Change {
    def describe = s"convert '$path' ${from.simpleString} -> ${to.simpleString}"
  }
  final case class Added(path: String, dataType: DataType, readsAs: Option[String]) extends Change {
    def describe = s"add '$path' ${dataType.simpleString} (existing entries read ${readsAs.getOrElse("null")})"
  }
  final case class Derived(path: String, sql: String) extends Change {
    def describe = s"derive '$path' as $sql"
  }
  final case class Removed(path: String, confirmed: Boolean) extends Change {
    def describe = s"remove '$path' (its values are dropped${if (confirmed) ", as the definition confirms" else ""})"
  }
  final case class Reordered(structPath: String, order: Seq[String]) extends Change {
    def describe = s"reorder ${if (structPath.isEmpty) "fields" else s"'$structPath'"} to ${order.mkString("(", ", ", ")")}"
  }
  final case class Relaxed(path: String) extends Change {
    def describe = s"'$path' becomes nullable"
  }
  /** A change made by one version step of a multi-version definition. */
  final case class InStep(version: Int, change: Change) extends Change {
    def describe = s"v$version: ${change.describe}"
  }
}

/** Where a refused change is: a field of the value, the keys of a map field, or a part of the state as a whole. */
sealed trait ProblemAt {
  def describe: String
}

object ProblemAt {
  /** A field, in the [[FieldPath]] spelling. */
  final case class Field(path: String) extends ProblemAt { def describe: String = path }
  /** The keys of the map field at `path`. */
  final case class MapKeys(path: String) extends ProblemAt { def describe: String = s"$path<key>" }
  case object Key extends ProblemAt { def describe = "<key>" }
  case object Value extends ProblemAt { def describe = "<value>" }
  case object State extends ProblemAt { def describe = "<state>" }
}

/** One side of a refused change: what the state had or is declared with, or what stands where a type would. */
sealed trait ProblemSide {
  def describe: String
}

object ProblemSide {
  /** A type, a schema, or another thing the state has, in words (`int`, `version 2 struct<...>`, `no timeout`). */
  final case class Text(describe: String) extends ProblemSide
  /** No such field on this side (added, removed, dropped before) or the thing in its place (a rule, a default). */
  final case class Marker(what: String) extends ProblemSide { def describe: String = s"<$what>" }
  /** A field a rename names as its source. */
  final case class RenamedFrom(from: String) extends ProblemSide { def describe: String = s"<renamed from '$from'>" }

  val Absent: ProblemSide = Marker("absent")
  val Removed: ProblemSide = Marker("removed")
  val Dropped: ProblemSide = Marker("dropped")
  val Default: ProblemSide = Marker("default")
  val Derived: ProblemSide = Marker("derived")
  val Rule: ProblemSide = Marker("rule")
  val Rollback: ProblemSide = Marker("rollback")

  def of(dataType: org.apache.spark.sql.types.DataType): ProblemSide = Text(dataType.simpleString)
}

/**
 * One reason a schema change is refused: where, what the state had and what is declared (typed: a decision asks
 * these, never their words), why, and the fix in one sentence. A fix that registers rules says where each of `asks`
 * goes ([[SchemaProblem.asked]]), one that changes the key where `rekey` goes ([[SchemaProblem.ChangeKey]]); each is
 * written as the place that prints it needs ([[FixFormat]]), a registration at `version`.
 */
final case class SchemaProblem(at: ProblemAt, old: ProblemSide, declared: ProblemSide, reason: String, fix: String,
    asks: Seq[FixRegistration] = Nil, version: Option[Int] = None, rekey: Option[ChangeKeyFix] = None) {
  /** Where, in words: the field's path, `<key>`, `<state>`. */
  def fieldPath: String = at.describe
  /** In words, its registrations as the application's calls, the state and checkpoint as placeholders. */
  def describe: String = describeAs(FixFormat.Application(None, None))
  def describeAs(format: FixFormat): String =
    s"field '${at.describe}': ${old.describe} -> ${declared.describe}: $reason. Fix: ${fixAs(format)}"
  def fixAs(format: FixFormat): String = {
    val rekeyed = rekey.fold(fix)(k => fix.replace(SchemaProblem.ChangeKey, format.changeKey(k)))
    asks.zipWithIndex.foldLeft(rekeyed) { case (text, (registration, i)) =>
      text.replace(SchemaProblem.asked(i), format.write(registration, version))
    }
  }

  /**
   * The fix with the version its registrations need, where not set yet: the resolution, which knows the recorded
   * version, fills it in (a rule applies only to a state recorded at a lower version).
   */
  def atVersion(v: Int): SchemaProblem = if (version.isDefined) this else copy(version = Some(v))

  /** Its registrations made for a map state's key (`map_key=`): the problem was found in the map's user key. */
  def ofMapKey: SchemaProblem = copy(asks = asks.map(_.copy(mapKey = true)))
}

object SchemaProblem {
  /** Where the fix of a problem says its `i`th registration. */
  def asked(i: Int): String = s"<registration $i>"

  /** Where the fix of a problem says its key change ([[SchemaProblem.rekey]]). */
  val ChangeKey = "<change key>"

  /** A problem whose fix registers `asks`: `fix` is given where each goes ([[asked]]). */
  def registering(at: ProblemAt, old: ProblemSide, declared: ProblemSide, reason: String, asks: FixRegistration*)(
      fix: Seq[String] => String): SchemaProblem =
    SchemaProblem(at, old, declared, reason, fix(asks.indices.map(asked)), asks)
}

/** The outcome of planning: the plan of the top-level struct, what it does, and what stops it. */
final case class EvolutionPlan(oldSchema: StructType, newSchema: StructType, root: StructPlan, changes: Seq[Change],
    problems: Seq[SchemaProblem], sql: SqlSettings) {
  def refused: Boolean = problems.nonEmpty

  /** Readable as it is: the same bytes, and nothing declared differently. */
  def identical: Boolean = !refused && root.preservesLayout && changes.isEmpty

  /** The same bytes under a different declaration (renamed in place, nullability relaxed). */
  def sameLayout: Boolean = !refused && root.preservesLayout

  /** Old fields whose values the plan drops. */
  def dropped: Seq[String] = changes.collect { case Change.Removed(path, _) => path }

  /** The migration that rewrites every entry; only for a plan that is neither refused nor layout-preserving. */
  def migration: RowMigration = {
    require(!refused && !root.preservesLayout, "only a plan that rewrites has a migration")
    ProjectionMigration(this)
  }
}
