package io.statesnap.evolution

import org.apache.spark.sql.types._

/**
 * The type changes a state migrates without being told how: those that keep every value exactly. Anything else
 * (narrowing, a conversion that may round, an unrelated type) needs an explicit `derived` expression, so a
 * loss is always something the application wrote down.
 */
object Conversions {
  /** The digits left of the point each integral type needs in a decimal. */
  private val integralDigits: Map[DataType, Int] =
    Map(ByteType -> 3, ShortType -> 5, IntegerType -> 10, LongType -> 19)

  /** Widening whose values a floating type holds exactly: every byte, short and int fits a double's 53 bits. */
  private val exactFloating: Map[DataType, Set[DataType]] = Map(
    ByteType -> Set(FloatType, DoubleType),
    ShortType -> Set(FloatType, DoubleType),
    IntegerType -> Set(DoubleType),
    FloatType -> Set(DoubleType))

  private val integralOrder: Seq[DataType] = Seq(ByteType, ShortType, IntegerType, LongType)

  /** Whether every value of `from` converts to `to` and back unchanged (string <-> binary: the same UTF-8 bytes). */
  def isLossless(from: DataType, to: DataType): Boolean = (from, to) match {
    case (StringType, BinaryType) | (BinaryType, StringType) => true
    case (a, b) if integralOrder.contains(a) && integralOrder.contains(b) =>
      integralOrder.indexOf(a) < integralOrder.indexOf(b)
    case (a, d: DecimalType) if integralDigits.contains(a) => d.precision - d.scale >= integralDigits(a)
    case (a: DecimalType, b: DecimalType) => b.scale >= a.scale && b.precision - b.scale >= a.precision - a.scale
    case (a, b) => exactFloating.get(a).exists(_.contains(b))
  }

  /**
   * Whether a field of type `from` could hold, converted by the rules with nothing written down, every value of a
   * field of type `to`: the same layout (names apart), a lossless conversion, or structs, arrays and map values whose
   * parts do (every old struct field kept by name). A field removed beside an added one it keeps every value in is a
   * likely rename: dropping its values is refused until the application says which it meant.
   */
  def keepsEveryValue(from: DataType, to: DataType): Boolean = (from, to) match {
    case _ if RowSchemaEvolution.normalize(from, keepNames = false) == RowSchemaEvolution.normalize(to, keepNames = false) =>
      true
    case (ArrayType(a, _), ArrayType(b, _)) => keepsEveryValue(a, b)
    case (MapType(ak, av, _), MapType(bk, bv, _)) => RowSchemaEvolution.sameLayout(ak, bk) && keepsEveryValue(av, bv)
    case (a: StructType, b: StructType) => a.fields.forall(f =>
      RowSchemaEvolution.indexOf(b, f.name).exists(i => keepsEveryValue(f.dataType, b(i).dataType)))
    case _ => isLossless(from, to)
  }

  /** Why a change that is not lossless is refused: one sentence for the error. */
  def whyNot(from: DataType, to: DataType): String = (from, to) match {
    case (IntegerType | LongType, FloatType) =>
      "a float holds integers exactly only up to 2^24, so larger values would be rounded"
    case (LongType, DoubleType) => "a double holds integers exactly only up to 2^53, so larger values would be rounded"
    case (a, d: DecimalType) if integralDigits.contains(a) =>
      s"${d.simpleString} keeps ${d.precision - d.scale} digits left of the point; ${a.simpleString} needs " +
        s"${integralDigits(a)}"
    case (a: DecimalType, b: DecimalType) if b.scale < a.scale =>
      s"${b.simpleString} keeps fewer digits after the point than ${a.simpleString}, so values would be rounded"
    case (a: DecimalType, b: DecimalType) =>
      s"${b.simpleString} keeps fewer digits left of the point than ${a.simpleString}, so large values would not fit"
    case (a, b) if isLossless(b, a) => "narrowing could lose values"
    case _ => "this type change has no lossless conversion"
  }
}
