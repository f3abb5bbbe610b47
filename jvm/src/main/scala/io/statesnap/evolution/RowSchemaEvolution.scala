package io.statesnap.evolution

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
 * The default evolution rules for UnsafeRow state (docs/evolution-rules.md): fields are matched by name,
 * recursively through structs, array elements and map values.
 *  - identical (field metadata ignored): [[EvolutionPlan.Identical]]
 *  - nullability relaxed: [[EvolutionPlan.SameLayout]]
 *  - field added (nullable; old entries read null), field removed, fields reordered, numeric widening:
 *    [[EvolutionPlan.Rewrite]]
 *  - anything else (narrowing, other type changes, a non-nullable field added, nullability tightened,
 *    a map key type change): [[EvolutionPlan.Refused]], with one [[SchemaProblem]] per field.
 */
object RowSchemaEvolution {
  import EvolutionPlan._

  def plan(oldSchema: StructType, newSchema: StructType): EvolutionPlan = {
    val diff = compareStruct("", oldSchema, newSchema)
    if (diff.problems.nonEmpty) Refused(diff.problems)
    else if (diff.rewrites.nonEmpty) Rewrite(new ProjectionMigration(oldSchema, newSchema, diff.rewrites))
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

  private def compareStruct(path: String, o: StructType, n: StructType): Diff = {
    val oldNames = o.fieldNames.toSet
    val newNames = n.fieldNames.toSet
    val added = n.fields.filterNot(f => oldNames(f.name)).map { f =>
      val p = join(path, f.name)
      if (f.nullable) Diff(rewrites = Seq(s"add '$p' ${f.dataType.simpleString} (existing entries read null)"))
      else Diff(problems = Seq(SchemaProblem(p, "<absent>", f.dataType.simpleString,
        "a non-nullable field was added, and entries written before it existed have no value for it",
        s"declare '$p' nullable (existing entries then read null)")))
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
    case _ if isWidening(o, n) => Diff(rewrites = Seq(s"widen '$path' ${o.simpleString} -> ${n.simpleString}"))
    case _ => Diff(problems = Seq(SchemaProblem(path, o.simpleString, n.simpleString,
      if (isWidening(n, o)) "narrowing could lose values" else "this type change has no lossless conversion",
      s"keep '$path' as ${o.simpleString}, or add a new field for the new type and stop writing the old one")))
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
