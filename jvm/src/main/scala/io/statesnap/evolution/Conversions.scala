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
