package io.statesnap.evolution

import scala.collection.mutable

import org.apache.spark.sql.catalyst.expressions.{BoundReference, Cast, Expression, Literal}
import org.apache.spark.sql.types._

/**
 * How a state's fields evolve beyond matching by name, for one version step. Every key and value is a
 * [[FieldPath]] (`address.zip`, `items[].price`).
 * @param renamed new field -> old field: the value is kept (an old path from the same array element or map value)
 * @param defaults new field -> SQL constant for entries written before the field existed
 * @param derived new field -> SQL expression over the OLD row (also how to narrow or round a type explicitly)
 * @param dropped old fields whose values are meant to go: confirms a drop statesnap would otherwise refuse
 */
final case class Rules(
    renamed: Map[String, String] = Map.empty,
    defaults: Map[String, String] = Map.empty,
    derived: Map[String, String] = Map.empty,
    dropped: Set[String] = Set.empty) {
  def isEmpty: Boolean = renamed.isEmpty && defaults.isEmpty && derived.isEmpty && dropped.isEmpty

  /**
   * Rules that contradict each other, whatever the schemas: a field given more than one of a rename, a default and
   * a derived expression, or dropped while a rename reads it. Each is (path, the rules, why, fix). Paths are
   * compared as written: the planner, which canonicalizes them, asks this too.
   */
  def conflicts: Seq[(String, String, String, String)] = {
    val kinds = Seq("renamed" -> renamed.keySet, "defaults" -> defaults.keySet, "derived" -> derived.keySet)
    val multiple = for (((a, as), i) <- kinds.zipWithIndex; (b, bs) <- kinds.drop(i + 1); path <- as.intersect(bs).toSeq
      .sorted) yield (path, s"$a and $b", "it has more than one rule", s"keep one rule for '$path'")
    multiple ++ dropped.intersect(renamed.values.toSet).toSeq.sorted.map { path =>
      (path, "dropped", "it is also the source of a rename", s"remove '$path' from dropped")
    }
  }
}

object Rules {
  val None: Rules = Rules()
}

/**
 * Plans how rows written under an old schema become rows of a new one (docs/evolution-rules.md): fields are
 * matched by name, at every struct level, through array elements and map values, plus the [[Rules]] of the step.
 * The result is a typed [[EvolutionPlan]]: one [[FieldSource]] per new field, the changes it makes, and the
 * problems that refuse it.
 */
object RowSchemaEvolution {
  def plan(oldSchema: StructType, newSchema: StructType, rules: Rules = Rules.None,
      sql: SqlSettings = SqlSettings.Default): EvolutionPlan =
    new Planner(oldSchema, newSchema, rules, sql).run()

  /**
   * Field names that only differ by case, at every level of `schema` (`which`: "recorded" or "declared"): a
   * match by name cannot tell them apart, so they are refused.
   */
  def duplicateNames(schema: StructType, which: String): Seq[SchemaProblem] = {
    def walk(dt: DataType, path: String): Seq[SchemaProblem] = dt match {
      case s: StructType =>
        s.fields.toSeq.groupBy(_.name.toLowerCase(java.util.Locale.ROOT)).values.filter(_.length > 1).toSeq
          .sortBy(_.head.name).map { same =>
            SchemaProblem(ProblemAt.Field(FieldPath.child(path, same.head.name)), ProblemSide.Marker(which),
              ProblemSide.Marker(which), s"the $which schema " +
              s"has the fields ${same.map(f => s"'${f.name}'").mkString(" and ")} in one struct, which a match by " +
              "name cannot tell apart", "give them names that differ by more than case")
          } ++ s.fields.toSeq.flatMap(f => walk(f.dataType, FieldPath.child(path, f.name)))
      case ArrayType(e, _) => walk(e, FieldPath.element(path))
      case MapType(k, v, _) => walk(k, s"$path<key>") ++ walk(v, FieldPath.mapValue(path))
      case _ => Nil
    }
    walk(schema, "")
  }

  /**
   * The value of `defaults[path] = text` for the field `nf`: a SQL constant, cast and EVALUATED under `sql`
   * (so `'abc'` for an int is refused, not stored as null), never NULL unless written as NULL, and never NULL
   * for a NOT NULL field.
   */
  def defaultValue(nf: StructField, path: String, text: String, sql: SqlSettings): Either[SchemaProblem, Literal] =
    SqlExpressions.resolve(text, new StructType(), sql).flatMap { e =>
      if (!e.foldable) Left("it is not a constant")
      else if (!Cast.canCast(e.dataType, nf.dataType)) Left(s"it is ${e.dataType.simpleString}, which cannot be " +
        s"cast to ${nf.dataType.simpleString}")
      else SqlExpressions.evaluate(sql(sql.cast(e, nf.dataType)), sql).flatMap {
        case null if !isNullLiteral(e) => Left(s"it evaluates to NULL as ${nf.dataType.simpleString}")
        case null if !nf.nullable => Left("it is NULL, but the field is declared NOT NULL")
        case value => Right(Literal(value, nf.dataType))
      }
    }.left.map(why => SchemaProblem(ProblemAt.Field(path), ProblemSide.Default, ProblemSide.of(nf.dataType), s"its default `$text` is invalid: " +
      why, s"give defaults['$path'] a SQL literal of type ${nf.dataType.simpleString}, such as " +
      exampleLiteral(nf.dataType)))

  /** The position of the field named exactly `name` (case-sensitive). */
  def indexOf(s: StructType, name: String): Option[Int] = Some(s.fieldNames.indexOf(name)).filter(_ >= 0)

  /** The field at `path` of `schema`, through structs, array elements and map values. */
  def fieldAt(schema: StructType, path: String): Option[StructField] = {
    def unwrap(dt: DataType, collections: String): Option[DataType] =
      collections.grouped(2).foldLeft(Option(dt)) {
        case (Some(ArrayType(e, _)), FieldPath.Element) => Some(e)
        case (Some(MapType(_, v, _)), FieldPath.MapValue) => Some(v)
        case _ => None
      }
    def walk(dt: DataType, segments: Seq[(String, String)]): Option[StructField] = (dt, segments) match {
      case (s: StructType, (name, collections) +: rest) => indexOf(s, name).flatMap { i =>
        if (rest.isEmpty) Some(s(i)).filter(_ => collections.isEmpty)
        else unwrap(s(i).dataType, collections).flatMap(walk(_, rest))
      }
      case _ => None
    }
    FieldPath.segments(path).toOption.flatMap(walk(schema, _))
  }

  private def isNullLiteral(e: Expression): Boolean = e match {
    case Literal(null, _) => true
    case c: Cast => isNullLiteral(c.child)
    case _ => false
  }

  /** A SQL constant of type `dt` for a fix to show, visibly a placeholder where no value is the natural one. */
  private[evolution] def exampleLiteral(dt: DataType): String = dt match {
    case StringType => "'<value>'"
    case BooleanType => "false"
    case _: NumericType => "0"
    case _ => s"CAST('<value>' AS ${dt.sql})"
  }

  /** `dt` without field metadata (comments, char/varchar lengths), which does not change the bytes. */
  def withoutMetadata(dt: DataType): DataType = dt match {
    case s: StructType => StructType(s.fields.map(f => StructField(f.name, withoutMetadata(f.dataType), f.nullable)))
    case ArrayType(e, n) => ArrayType(withoutMetadata(e), n)
    case MapType(k, v, n) => MapType(withoutMetadata(k), withoutMetadata(v), n)
    case other => other
  }

  /** Equal up to nullability and field metadata: the same UnsafeRow bytes, and the same names. */
  def sameLayout(a: DataType, b: DataType): Boolean = normalize(a, keepNames = true) == normalize(b, keepNames = true)

  private[evolution] def normalize(dt: DataType, keepNames: Boolean): DataType = dt match {
    case s: StructType => StructType(s.fields.map(f =>
      StructField(if (keepNames) f.name else "_", normalize(f.dataType, keepNames))))
    case ArrayType(e, _) => ArrayType(normalize(e, keepNames), containsNull = true)
    case MapType(k, v, _) => MapType(normalize(k, keepNames), normalize(v, keepNames), valueContainsNull = true)
    case other => other
  }
}

/** One planning run; not reusable. */
private final class Planner(old: StructType, neu: StructType, rawRules: Rules, sql: SqlSettings) {
  import Planner.Scope
  import RowSchemaEvolution.sameLayout

  private val problems = mutable.ArrayBuffer.empty[SchemaProblem]
  private val changes = mutable.ArrayBuffer.empty[Change]
  /** Rules applied, as `kind:path`: a rule that never applies is refused rather than silently ignored. */
  private val used = mutable.Set.empty[String]
  /** Old paths some new field reads. */
  private val consumed = mutable.Set.empty[String]
  /** Top-level old fields a derived expression reads: their removal is deliberate. */
  private val referenced = mutable.Set.empty[String]

  private def canonicalKeys[V](kind: String, m: Map[String, V]): Map[String, V] = m.flatMap { case (path, v) =>
    FieldPath.canonical(path) match {
      case Right(p) => Some(p -> v)
      case Left(why) => ruleProblem(path, kind, why, "write the path as in docs/evolution-rules.md: a.b, items[].c"); None
    }
  }

  private val derived = canonicalKeys("derived", rawRules.derived)
  private val defaults = canonicalKeys("defaults", rawRules.defaults)
  private val renamed = canonicalKeys("renamed", rawRules.renamed).flatMap { case (to, from) =>
    FieldPath.canonical(from) match {
      case Right(f) => Some(to -> f)
      case Left(why) => ruleProblem(to, "renamed", why, "name the old field as a path: a.b, items[].c"); None
    }
  }
  private val dropped = canonicalKeys("dropped", rawRules.dropped.map((_, ())).toMap).keySet

  def run(): EvolutionPlan = {
    // Identical schemas need no match by name (a state recorded before statesnap refused duplicate names).
    if (old != neu) {
      problems ++= RowSchemaEvolution.duplicateNames(old, "recorded")
      problems ++= RowSchemaEvolution.duplicateNames(neu, "declared")
    }
    conflictingRules()
    val root =
      if (problems.nonEmpty) StructPlan(Nil, old.length, Nil)
      else struct(old, neu, "", "", Nil, Scope(Some(old), "", inCollection = false))
    if (problems.isEmpty) unusedRules()
    EvolutionPlan(old, neu, root, changes.toSeq, problems.toSeq, sql)
  }

  private def struct(o: StructType, n: StructType, newPrefix: String, oldPrefix: String, at: Seq[Int],
      scope: Scope): StructPlan = {
    val plans = n.fields.toSeq.map { nf =>
      val path = FieldPath.child(newPrefix, nf.name)
      FieldPlan(path, nf, source(nf, path, o, oldPrefix, at, scope))
    }
    removed(o, oldPrefix, plans)
    val inPlace = plans.collect { case FieldPlan(_, f, FieldSource.FromOld(ordinals, _, _, _))
      if ordinals.init == at && ordinals.nonEmpty => (ordinals.last, f.name) }
    if (inPlace.map(_._1) != inPlace.map(_._1).sorted) changes += Change.Reordered(newPrefix, inPlace.map(_._2))
    StructPlan(at, o.length, plans)
  }

  private def source(nf: StructField, path: String, o: StructType, oldPrefix: String, at: Seq[Int],
      scope: Scope): FieldSource = {
    lazy val sameName = RowSchemaEvolution.indexOf(o, nf.name)
    if (derived.contains(path)) {
      used += s"derived:$path"
      if (scope.inCollection) {
        problem(path, ProblemSide.Derived, ProblemSide.of(nf.dataType), "a derived expression is SQL over the whole row and " +
          "cannot be evaluated inside an array element or map value",
          "derive the whole top-level field that contains it (for example with transform(...))")
        FieldSource.Null
      } else derivedSource(nf, path, derived(path))
    } else if (renamed.contains(path)) {
      used += s"renamed:$path"
      val from = renamed(path)
      resolveInScope(from, scope) match {
        case Right((ordinals, of, parentsNullable)) =>
          changes += Change.Renamed(path, from)
          // A null struct around this one reads null as a whole; only structs between it and the source matter.
          val within = parentsNullable.drop(ordinals.zip(at).takeWhile { case (a, b) => a == b }.length)
          fromOld(nf, path, ordinals, if (within.contains(true)) of.copy(nullable = true) else of, from, scope)
        case Left(why) =>
          problem(path, ProblemSide.RenamedFrom(from), ProblemSide.of(nf.dataType), why,
            s"name in renamed['$path'] a field of the recorded schema ${scope.root.getOrElse(old).simpleString}")
          FieldSource.Null
      }
    } else if (sameName.isDefined) {
      val i = sameName.get
      fromOld(nf, path, at :+ i, o(i), FieldPath.child(oldPrefix, o(i).name), scope)
    } else if (defaults.contains(path)) {
      used += s"defaults:$path"
      defaultSource(nf, path, defaults(path))
    } else {
      if (nf.nullable) changes += Change.Added(path, nf.dataType, None)
      else registering(path, ProblemSide.Absent, ProblemSide.of(nf.dataType), "a non-nullable field was added, and " +
        "entries written before it existed have no value for it",
        FixRegistration.defaults(path, RowSchemaEvolution.exampleLiteral(nf.dataType)))(
        r => s"declare '$path' nullable, or give it a default (for the entries written before it): ${r(0)}")
      FieldSource.Null
    }
  }

  private def fromOld(nf: StructField, path: String, ordinals: Seq[Int], of: StructField, oldPath: String,
      scope: Scope): FieldSource = {
    consumed += oldPath
    if (of.nullable && !nf.nullable) tightened(path, nf.dataType)
    else if (!of.nullable && nf.nullable) changes += Change.Relaxed(path)
    FieldSource.FromOld(ordinals, oldPath, of.dataType, conversion(of.dataType, nf.dataType, path, oldPath,
      ordinals, scope))
  }

  private def conversion(ot: DataType, nt: DataType, path: String, oldPath: String, ordinals: Seq[Int],
      scope: Scope): Conversion = (ot, nt) match {
    case _ if sameLayout(ot, nt) =>
      nestedNullability(ot, nt, path)
      Conversion.Identity
    case (os: StructType, ns: StructType) => Conversion.Struct(struct(os, ns, path, oldPath, ordinals, scope))
    case (ArrayType(oe, ocn), ArrayType(ne, ncn)) =>
      nullability(ocn, ncn, FieldPath.element(path), ne)
      Conversion.Array(collectionValue(oe, ne, FieldPath.element(path), FieldPath.element(oldPath)))
    case (MapType(ok, ov, ovn), MapType(nk, nv, nvn)) =>
      if (!sameLayout(ok, nk)) {
        problems += SchemaProblem(ProblemAt.MapKeys(path), ProblemSide.of(ok), ProblemSide.of(nk),
          "map keys cannot be converted (converted keys could collide)", s"keep the key type of '$path'")
      }
      nullability(ovn, nvn, FieldPath.mapValue(path), nv)
      Conversion.MapValues(collectionValue(ov, nv, FieldPath.mapValue(path), FieldPath.mapValue(oldPath)))
    case _ if Conversions.isLossless(ot, nt) =>
      changes += Change.Converted(path, ot, nt)
      Conversion.Cast(ot, nt)
    case _ =>
      if (scope.inCollection) problem(path, ProblemSide.of(ot), ProblemSide.of(nt), Conversions.whyNot(ot, nt),
        s"keep '$path' as ${ot.simpleString}, or derive the whole top-level field that contains it with SQL")
      else registering(path, ProblemSide.of(ot), ProblemSide.of(nt), Conversions.whyNot(ot, nt),
        FixRegistration.derived(path, s"CAST($oldPath AS ${nt.sql})"))(
        r => s"keep '$path' as ${ot.simpleString}, or convert it explicitly: ${r(0)}")
      Conversion.Identity
  }

  /** An array element or map value: the root of its own scope when it is a struct. */
  private def collectionValue(ot: DataType, nt: DataType, path: String, oldPath: String): Conversion = (ot, nt) match {
    case (os: StructType, ns: StructType) if !sameLayout(os, ns) =>
      Conversion.Struct(struct(os, ns, path, oldPath, Nil, Scope(Some(os), oldPath, inCollection = true)))
    case _ => conversion(ot, nt, path, oldPath, Nil, Scope(None, oldPath, inCollection = true))
  }

  /**
   * An old field named by a rename: within the same array element or map value, reached through structs. With
   * its ordinals from the scope's root, and whether each struct on the way there is nullable.
   */
  private def resolveInScope(from: String, scope: Scope): Either[String, (Seq[Int], StructField, Seq[Boolean])] = {
    val rest = if (scope.oldPrefix.isEmpty) Some(from)
      else Some(from).filter(_.startsWith(scope.oldPrefix + ".")).map(_.drop(scope.oldPrefix.length + 1))
    (rest, scope.root) match {
      case (Some(r), Some(root)) => FieldPath.names(r) match {
        case Right(names) => walk(root, names).toRight(s"it is renamed from '$from', which the recorded " +
          s"schema does not have${if (scope.oldPrefix.nonEmpty) s" inside '${scope.oldPrefix}'" else ""}")
        case Left(why) => Left(s"it is renamed from '$from', which is not a struct field here: $why")
      }
      case _ => Left(s"it is renamed from '$from', which is outside '${scope.oldPrefix}': a rename takes a value " +
        "from the same array element or map value")
    }
  }

  private def walk(s: StructType, names: Seq[String]): Option[(Seq[Int], StructField, Seq[Boolean])] =
    RowSchemaEvolution.indexOf(s, names.head).flatMap { i =>
      if (names.tail.isEmpty) Some((Seq(i), s(i), Nil))
      else s(i).dataType match {
        case inner: StructType => walk(inner, names.tail).map { case (o, f, nullable) =>
          (i +: o, f, s(i).nullable +: nullable)
        }
        case _ => None
      }
    }

  private def removed(o: StructType, oldPrefix: String, plans: Seq[FieldPlan]): Unit =
    o.fields.zipWithIndex.foreach { case (of, i) =>
      val path = FieldPath.child(oldPrefix, of.name)
      val partly = consumed.exists(c => c.startsWith(path + ".") || c.startsWith(path + FieldPath.Element) ||
        c.startsWith(path + FieldPath.MapValue))
      // A field derived under its own name replaces the old value: its change says so, it is not also removed.
      val replaced = plans.exists(fp => fp.field.name == of.name && fp.source.isInstanceOf[FieldSource.Derived])
      if (!consumed(path) && !replaced) {
        val confirmed = dropped(path)
        if (confirmed) used += s"dropped:$path"
        def unread(fp: FieldPlan) = fp.source == FieldSource.Null || fp.source.isInstanceOf[FieldSource.Default]
        // An added field that could hold every value of the removed one may be it under a new name (and type): in
        // its place first, then anywhere at this level.
        def couldBeIt(fp: FieldPlan) = unread(fp) && fp.field.name != of.name &&
          Conversions.keepsEveryValue(of.dataType, fp.field.dataType)
        val inItsPlace = plans.lift(i).filter(couldBeIt)
        val converted = inItsPlace.orElse(plans.find(couldBeIt))
        val caseOnly = plans.find(fp => unread(fp) && fp.field.name != of.name &&
          fp.field.name.equalsIgnoreCase(of.name))
        val deliberate = confirmed || partly || referenced(path)
        caseOnly.orElse(converted) match {
          case Some(likely) if !deliberate =>
            val (was, is) = (of.dataType.simpleString, likely.field.dataType.simpleString)
            val why = if (caseOnly.isDefined) s"only the case of its name changed, to '${likely.field.name}'"
              else s"'${likely.path}' $is was added${if (inItsPlace.contains(likely)) " in its place" else ""}" +
                (if (was == is) "" else s", which holds every $was value")
            registering(path, ProblemSide.of(of.dataType), ProblemSide.Removed,
              s"$why: a likely rename, which would drop every value of it",
              FixRegistration.renamed(likely.path, path), FixRegistration.dropped(Seq(path)))(
              r => s"${r(0)} to keep its values, or ${r(1)} to confirm that they go")
          case _ => changes += Change.Removed(path, confirmed)
        }
      }
    }

  private def derivedSource(nf: StructField, path: String, text: String): FieldSource =
    SqlExpressions.resolve(text, old, sql) match {
      case Left(why) =>
        problem(path, ProblemSide.Derived, ProblemSide.of(nf.dataType), s"its derived expression `$text` is invalid: $why",
          s"write derived['$path'] as SQL over the recorded fields ${old.fieldNames.mkString(", ")}")
        FieldSource.Null
      case Right(e) =>
        referenced ++= e.collect { case b: BoundReference => FieldPath.child("", old(b.ordinal).name) }
        if (!Cast.canCast(e.dataType, nf.dataType)) {
          problem(path, ProblemSide.of(e.dataType), ProblemSide.of(nf.dataType), s"its derived expression `$text` is " +
            s"${e.dataType.simpleString}, which cannot be cast to ${nf.dataType.simpleString}",
            s"CAST the expression to ${nf.dataType.sql}")
          FieldSource.Null
        } else {
          val cast = sql(sql.cast(e, nf.dataType))
          if (!nf.nullable && cast.nullable) {
            problem(path, ProblemSide.Derived, ProblemSide.Text(s"${nf.dataType.simpleString} (not null)"), s"its derived expression `$text` " +
              "may be null, but the field is declared NOT NULL", s"wrap it in coalesce($text, <a value>), or " +
              s"declare '$path' nullable")
          }
          changes += Change.Derived(path, text)
          FieldSource.Derived(text, cast)
        }
    }

  private def defaultSource(nf: StructField, path: String, text: String): FieldSource =
    RowSchemaEvolution.defaultValue(nf, path, text, sql) match {
      case Right(value) =>
        changes += Change.Added(path, nf.dataType, Some(text))
        FieldSource.Default(text, value)
      case Left(p) =>
        problems += p
        FieldSource.Null
    }

  private def nullability(wasNullable: Boolean, isNullable: Boolean, path: String, dt: DataType): Unit =
    if (wasNullable && !isNullable) tightened(path, dt)
    else if (!wasNullable && isNullable) changes += Change.Relaxed(path)

  private def tightened(path: String, dt: DataType): Unit =
    problem(path, ProblemSide.Text(s"${dt.simpleString} (nullable)"), ProblemSide.Text(s"${dt.simpleString} (not null)"),
      "nullability was tightened, but existing entries may hold null", s"keep '$path' nullable")

  /** Same layout, so only nested nullability can differ: report relaxations, refuse tightenings. */
  private def nestedNullability(o: DataType, n: DataType, path: String): Unit = (o, n) match {
    case (os: StructType, ns: StructType) => os.fields.zip(ns.fields).foreach { case (of, nf) =>
      val p = FieldPath.child(path, nf.name)
      nullability(of.nullable, nf.nullable, p, nf.dataType)
      nestedNullability(of.dataType, nf.dataType, p)
    }
    case (ArrayType(oe, ocn), ArrayType(ne, ncn)) =>
      nullability(ocn, ncn, FieldPath.element(path), ne)
      nestedNullability(oe, ne, FieldPath.element(path))
    case (MapType(_, ov, ovn), MapType(_, nv, nvn)) =>
      nullability(ovn, nvn, FieldPath.mapValue(path), nv)
      nestedNullability(ov, nv, FieldPath.mapValue(path))
    case _ =>
  }

  private def conflictingRules(): Unit = Rules(renamed, defaults, derived, dropped).conflicts.foreach {
    case (path, kinds, why, fix) => ruleProblem(path, kinds, why, fix)
  }

  private def unusedRules(): Unit = {
    def exists(schema: StructType, path: String): Boolean = RowSchemaEvolution.fieldAt(schema, path).isDefined
    for ((kind, keys) <- Seq("renamed" -> renamed.keySet, "defaults" -> defaults.keySet,
        "derived" -> derived.keySet); path <- keys if !used(s"$kind:$path")) {
      val why = if (!exists(neu, path)) s"the snapshot's $kind names a field the declared schema does not have"
        else if (kind == "defaults") "the field is read from the recorded state, so its default never applies"
        else s"the rule never applies: the field's parent is not read from the recorded state"
      ruleProblem(path, kind, why, s"name a field of ${neu.simpleString}, or remove the rule")
    }
    dropped.filterNot(p => used(s"dropped:$p")).foreach { path =>
      val why = if (exists(neu, path)) "dropped names a field the declared schema still has"
        else if (!exists(old, path)) "dropped names a field the recorded schema does not have"
        else "the field is still read by the declared schema"
      ruleProblem(path, "dropped", why, s"remove '$path' from dropped")
    }
  }

  private def ruleProblem(path: String, kind: String, why: String, fix: String): Unit =
    problem(path, ProblemSide.Marker(kind), ProblemSide.Rule, why, fix)

  private def problem(path: String, old: ProblemSide, declared: ProblemSide, reason: String, fix: String): Unit =
    problems += SchemaProblem(ProblemAt.Field(path), old, declared, reason, fix)

  /** A problem whose fix registers `asks` ([[SchemaProblem.registering]]). */
  private def registering(path: String, old: ProblemSide, declared: ProblemSide, reason: String,
      asks: FixRegistration*)(fix: Seq[String] => String): Unit =
    problems += SchemaProblem.registering(ProblemAt.Field(path), old, declared, reason, asks: _*)(fix)
}

private object Planner {
  /** Where the rules of a struct are rooted: the state's value, or one array element or map value. */
  final case class Scope(root: Option[StructType], oldPrefix: String, inCollection: Boolean)
}
