package io.statesnap.evolution

import org.apache.spark.sql.catalyst.expressions.{BoundReference, Cast, Expression, Literal}
import org.apache.spark.sql.types._

/** What it takes to read rows written under an old schema with a new one. */
sealed trait EvolutionPlan

object EvolutionPlan {
  case object Identical extends EvolutionPlan
  /** Same byte layout, different declaration (nullability relaxed): nothing to rewrite. */
  final case class SameLayout(changes: Seq[String]) extends EvolutionPlan
  /** Every row must be rewritten by `migration`. */
  final case class Rewrite(migration: RowMigration) extends EvolutionPlan
  final case class Refused(problems: Seq[SchemaProblem]) extends EvolutionPlan
}

/**
 * The evolution rules for UnsafeRow state (docs/evolution-rules.md): fields are matched by name, recursively
 * through structs, array elements and map values, plus the state's own [[RowSchemaEvolution.Rules]] for its
 * top-level fields (renamed, defaults, derived).
 *  - identical (field metadata ignored): [[EvolutionPlan.Identical]]
 *  - nullability relaxed, or fields renamed in place: [[EvolutionPlan.SameLayout]]
 *  - field added (nullable, or with a default), removed, reordered, renamed, derived, widened, string<->binary:
 *    [[EvolutionPlan.Rewrite]]
 *  - anything else (narrowing without a derived expression, other type changes, a non-nullable field added
 *    without a default, nullability tightened, a map key type change, a rule naming an unknown field, SQL that
 *    does not resolve): [[EvolutionPlan.Refused]], with one [[SchemaProblem]] per field.
 */
object RowSchemaEvolution {
  import EvolutionPlan._
  import ProjectionMigration.{convert, indexOf}

  /**
   * How a state's top-level fields evolve beyond matching by name.
   * @param renamed new field name -> old field name: the value is kept
   * @param defaults new field name -> SQL literal for entries written before the field existed
   * @param derived new field name -> SQL expression over the OLD row (also how to narrow a type explicitly)
   */
  final case class Rules(
      renamed: Map[String, String] = Map.empty,
      defaults: Map[String, String] = Map.empty,
      derived: Map[String, String] = Map.empty)

  object Rules {
    val None: Rules = Rules()
  }

  def plan(oldSchema: StructType, newSchema: StructType, rules: Rules = Rules.None): EvolutionPlan = {
    // Rules say how to get here from the recorded schema: once the state has the declared layout (a restart
    // after the migration), they have nothing left to do.
    val effective = if (sameLayout(oldSchema, newSchema)) Rules.None else rules
    val (evolution, expressions) = compareTop(oldSchema, newSchema, effective)
    val diff = checkDefinition(newSchema, rules) ++ evolution
    if (diff.problems.nonEmpty) Refused(diff.problems)
    else if (diff.rewrites.nonEmpty) Rewrite(new ProjectionMigration(oldSchema.length, expressions, diff.rewrites))
    else if (diff.relaxed.nonEmpty) SameLayout(diff.relaxed)
    else Identical
  }

  /** Lossless conversions Spark's Cast performs exactly (int to float rounds above 2^24, as in Avro and Flink). */
  private val widenings: Map[DataType, Set[DataType]] = Map(
    ByteType -> Set(ShortType, IntegerType, LongType, FloatType, DoubleType),
    ShortType -> Set(IntegerType, LongType, FloatType, DoubleType),
    IntegerType -> Set(LongType, FloatType, DoubleType),
    LongType -> Set(FloatType, DoubleType),
    FloatType -> Set(DoubleType))

  def isWidening(from: DataType, to: DataType): Boolean = widenings.get(from).exists(_.contains(to))

  /** Conversions that migrate without a rule: widenings, and string <-> binary (the same UTF-8 bytes). */
  def isConvertible(from: DataType, to: DataType): Boolean = isWidening(from, to) ||
    (from == StringType && to == BinaryType) || (from == BinaryType && to == StringType)

  /** Equal up to nullability and field metadata: the same UnsafeRow bytes. */
  def sameLayout(a: DataType, b: DataType): Boolean = normalize(a) == normalize(b)

  private def normalize(dt: DataType): DataType = dt match {
    case s: StructType => StructType(s.fields.map(f => StructField(f.name, normalize(f.dataType))))
    case ArrayType(e, _) => ArrayType(normalize(e), containsNull = true)
    case MapType(k, v, _) => MapType(normalize(k), normalize(v), valueContainsNull = true)
    case other => other
  }

  private final case class Diff(
      problems: Seq[SchemaProblem] = Nil, rewrites: Seq[String] = Nil, relaxed: Seq[String] = Nil) {
    def ++(o: Diff): Diff = Diff(problems ++ o.problems, rewrites ++ o.rewrites, relaxed ++ o.relaxed)
  }

  private def join(path: String, name: String): String = if (path.isEmpty) name else s"$path.$name"

  /** The top level: [[compareStruct]]'s rules plus the state's own rules, and one expression per new field. */
  private def compareTop(o: StructType, n: StructType, rules: Rules): (Diff, Seq[Expression]) = {
    val ruleDiff = checkSources(o, n, rules)
    val renamedFrom = rules.renamed.values.toSet
    val perField = n.fields.toSeq.zipWithIndex.map { case (nf, position) =>
      val name = nf.name
      (rules.derived.get(name), rules.renamed.get(name), indexOf(o, name), rules.defaults.get(name)) match {
        case (Some(sql), _, _, _) => derivedField(nf, sql, o)
        case (_, Some(oldName), _, _) => indexOf(o, oldName) match {
          case Some(i) =>
            val of = o(i)
            val diff = compareType(name, of.dataType, nf.dataType) ++
              compareNullability(name, nf.dataType, of.nullable, nf.nullable)
            val renaming = s"rename '$oldName' to '$name'"
            val inPlace = i == position && sameLayout(of.dataType, nf.dataType)
            (diff ++ (if (inPlace) Diff(relaxed = Seq(renaming)) else Diff(rewrites = Seq(renaming))),
              convert(BoundReference(i, of.dataType, nullable = true), of.dataType, nf.dataType))
          case None => (Diff(), Literal(null, nf.dataType)) // reported by checkRules
        }
        case (_, _, Some(i), _) =>
          val of = o(i)
          (compareType(name, of.dataType, nf.dataType) ++
            compareNullability(name, nf.dataType, of.nullable, nf.nullable),
            convert(BoundReference(i, of.dataType, nullable = true), of.dataType, nf.dataType))
        case (_, _, None, Some(sql)) => defaultField(nf, sql)
        case _ => (addedField(name, nf), Literal(null, nf.dataType))
      }
    }
    val removed = o.fields.filterNot(f => n.fieldNames.contains(f.name) || renamedFrom(f.name))
      .map(f => Diff(rewrites = Seq(s"remove '${f.name}' (its values are dropped)")))
    val common = n.fieldNames.filter(f => o.fieldNames.contains(f) && !rules.renamed.contains(f) &&
      !rules.derived.contains(f))
    val reordered =
      if (o.fieldNames.filter(common.contains).sameElements(common)) Diff()
      else Diff(rewrites = Seq(s"reorder fields to ${common.mkString("(", ", ", ")")}"))
    ((ruleDiff +: reordered +: removed.toSeq) ++ perField.map(_._1)).reduce(_ ++ _) -> perField.map(_._2)
  }

  /** Problems of the rules themselves, whatever the recorded schema: unknown fields, conflicting rules. */
  private def checkDefinition(n: StructType, rules: Rules): Diff = {
    def unknown(kind: String, names: Iterable[String]) = names.filterNot(n.fieldNames.contains).map { f =>
      SchemaProblem(f, s"<$kind>", "<absent>", s"the snapshot's $kind names a field the declared schema does not have",
        s"name a field of ${n.simpleString}")
    }
    val conflicting = (rules.renamed.keySet ++ rules.defaults.keySet).intersect(rules.derived.keySet).map { f =>
      SchemaProblem(f, "<derived>", "<renamed/default>", "it is both derived and renamed or defaulted",
        s"keep one rule for '$f'")
    }
    Diff(problems = (unknown("renamed", rules.renamed.keys) ++ unknown("defaults", rules.defaults.keys) ++
      unknown("derived", rules.derived.keys) ++ conflicting).toSeq)
  }

  /** Renames must start from fields the recorded schema has. */
  private def checkSources(o: StructType, n: StructType, rules: Rules): Diff =
    Diff(problems = rules.renamed.collect { case (to, from) if !o.fieldNames.contains(from) =>
      SchemaProblem(to, s"<renamed from '$from'>", n.find(_.name == to).map(_.dataType.simpleString).getOrElse("?"),
        s"it is renamed from '$from', which the recorded schema ${o.simpleString} does not have",
        s"name a field of the recorded schema in renamed['$to']")
    }.toSeq)

  private def derivedField(nf: StructField, sql: String, o: StructType): (Diff, Expression) =
    SqlExpressions.resolve(sql, o) match {
      case Left(why) => (problem(nf, "<derived>", s"its derived expression `$sql` is invalid: $why",
        s"write derived['${nf.name}'] as SQL over the recorded fields ${o.fieldNames.mkString(", ")}"), null)
      case Right(e) if !Cast.canCast(e.dataType, nf.dataType) =>
        (problem(nf, e.dataType.simpleString, s"its derived expression `$sql` is ${e.dataType.simpleString}, " +
          s"which cannot be cast to ${nf.dataType.simpleString}", s"CAST the expression to ${nf.dataType.sql}"), null)
      case Right(e) => (Diff(rewrites = Seq(s"derive '${nf.name}' as $sql")), castTo(e, nf.dataType))
    }

  private def defaultField(nf: StructField, sql: String): (Diff, Expression) =
    SqlExpressions.resolve(sql, new StructType()) match {
      case Right(e) if e.foldable && Cast.canCast(e.dataType, nf.dataType) =>
        (Diff(rewrites = Seq(s"add '${nf.name}' ${nf.dataType.simpleString} (existing entries read $sql)")),
          castTo(e, nf.dataType))
      case other =>
        val why = other.fold(identity, e => s"it is not a constant of a type castable to ${nf.dataType.simpleString}")
        (problem(nf, "<default>", s"its default `$sql` is invalid: $why",
          s"give defaults['${nf.name}'] a SQL literal such as ${exampleLiteral(nf.dataType)}"), null)
    }

  private def addedField(name: String, nf: StructField): Diff =
    if (nf.nullable) Diff(rewrites = Seq(s"add '$name' ${nf.dataType.simpleString} (existing entries read null)"))
    else problem(nf, "<absent>", "a non-nullable field was added, and entries written before it existed have no " +
      "value for it", s"declare '$name' nullable, or give it a default (defaults={'$name': ...})")

  private def problem(nf: StructField, oldType: String, reason: String, fix: String): Diff =
    Diff(problems = Seq(SchemaProblem(nf.name, oldType, nf.dataType.simpleString, reason, fix)))

  private def castTo(e: Expression, to: DataType): Expression =
    if (e.dataType == to) e else Cast(e, to, Some("UTC"))

  private def exampleLiteral(dt: DataType): String = dt match {
    case StringType => "\"'EUR'\""
    case BooleanType => "'false'"
    case _: NumericType => "'0'"
    case _ => s"'CAST(NULL AS ${dt.sql})'"
  }

  private def compareStruct(path: String, o: StructType, n: StructType): Diff = {
    val oldNames = o.fieldNames.toSet
    val newNames = n.fieldNames.toSet
    val added = n.fields.filterNot(f => oldNames(f.name)).map { f =>
      val p = join(path, f.name)
      addedField(p, f)
    }
    val removed = o.fields.filterNot(f => newNames(f.name))
      .map(f => Diff(rewrites = Seq(s"remove '${join(path, f.name)}' (its values are dropped)")))
    val common = n.fields.filter(f => oldNames(f.name)).map { nf =>
      val of = o(nf.name)
      compareType(join(path, nf.name), of.dataType, nf.dataType) ++
        compareNullability(join(path, nf.name), nf.dataType, of.nullable, nf.nullable)
    }
    val commonOrderOld = o.fieldNames.filter(newNames)
    val commonOrderNew = n.fieldNames.filter(oldNames)
    val reordered =
      if (commonOrderOld.sameElements(commonOrderNew)) Diff()
      else Diff(rewrites = Seq(s"reorder ${if (path.isEmpty) "fields" else s"'$path'"} to " +
        commonOrderNew.mkString("(", ", ", ")")))
    (added ++ removed ++ common).foldLeft(reordered)(_ ++ _)
  }

  private def compareNullability(path: String, dt: DataType, wasNullable: Boolean, isNullable: Boolean): Diff =
    if (wasNullable == isNullable) Diff()
    else if (isNullable) Diff(relaxed = Seq(s"'$path' becomes nullable"))
    else Diff(problems = Seq(SchemaProblem(path, s"${dt.simpleString} (nullable)", s"${dt.simpleString} (not null)",
      "nullability was tightened, but existing entries may hold null", s"keep '$path' nullable")))

  private def compareType(path: String, o: DataType, n: DataType): Diff = (o, n) match {
    case _ if sameLayout(o, n) => relaxedNullability(path, o, n)
    case (os: StructType, ns: StructType) => compareStruct(path, os, ns)
    case (ArrayType(oe, ocn), ArrayType(ne, ncn)) =>
      compareType(s"$path[]", oe, ne) ++ compareNullability(s"$path[]", ne, ocn, ncn)
    case (MapType(ok, ov, ovn), MapType(nk, nv, nvn)) =>
      val keys =
        if (sameLayout(ok, nk)) Diff()
        else Diff(problems = Seq(SchemaProblem(s"$path<key>", ok.simpleString, nk.simpleString,
          "map keys cannot be converted (converted keys could collide)", s"keep the key type of '$path'")))
      keys ++ compareType(s"$path{}", ov, nv) ++ compareNullability(s"$path{}", nv, ovn, nvn)
    case _ if isConvertible(o, n) =>
      Diff(rewrites = Seq(s"convert '$path' ${o.simpleString} -> ${n.simpleString}"))
    case _ => Diff(problems = Seq(SchemaProblem(path, o.simpleString, n.simpleString,
      if (isWidening(n, o)) "narrowing could lose values" else "this type change has no lossless conversion",
      s"keep '$path' as ${o.simpleString}, or derive it explicitly with a registered snapshot " +
        s"(derived={'$path': 'CAST($path AS ${n.sql})'} for a top-level field)")))
  }

  /** Same layout, so only nested nullability can differ: report relaxations, refuse tightenings. */
  private def relaxedNullability(path: String, o: DataType, n: DataType): Diff = (o, n) match {
    case (os: StructType, ns: StructType) =>
      os.fields.zip(ns.fields).map { case (of, nf) =>
        relaxedNullability(join(path, nf.name), of.dataType, nf.dataType) ++
          compareNullability(join(path, nf.name), nf.dataType, of.nullable, nf.nullable)
      }.foldLeft(Diff())(_ ++ _)
    case (ArrayType(oe, ocn), ArrayType(ne, ncn)) =>
      relaxedNullability(s"$path[]", oe, ne) ++ compareNullability(s"$path[]", ne, ocn, ncn)
    case (MapType(_, ov, ovn), MapType(_, nv, nvn)) =>
      relaxedNullability(s"$path{}", ov, nv) ++ compareNullability(s"$path{}", nv, ovn, nvn)
    case _ => Diff()
  }
}
