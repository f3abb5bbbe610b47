package io.statesnap.testkit

import java.util.Base64

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.util.{ArrayBasedMapData, ArrayData, GenericArrayData, MapData}
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String
import org.json4s._

/**
 * State values as JSON for the Python property tests: structs are objects by field name, arrays lists, maps
 * lists of [key, value] pairs, decimals strings, binary base64, so every value crosses py4j exactly.
 */
object JsonRows {
  def toCatalyst(json: JValue, dt: DataType): Any = (json, dt) match {
    case (JNull | JNothing, _) => null
    case (JInt(v), ByteType) => v.toByte
    case (JInt(v), ShortType) => v.toShort
    case (JInt(v), IntegerType) => v.toInt
    case (JInt(v), LongType) => v.toLong
    case (JInt(v), FloatType) => v.toFloat
    case (JInt(v), DoubleType) => v.toDouble
    case (JDouble(v), FloatType) => v.toFloat
    case (JDouble(v), DoubleType) => v
    case (JString(v), d: DecimalType) => Decimal(BigDecimal(v), d.precision, d.scale)
    case (JString(v), StringType) => UTF8String.fromString(v)
    case (JString(v), BinaryType) => Base64.getDecoder.decode(v)
    case (JBool(v), BooleanType) => v
    case (JObject(_), s: StructType) => InternalRow.fromSeq(s.fields.toSeq.map(f => toCatalyst(json \ f.name, f.dataType)))
    case (JArray(items), ArrayType(e, _)) => new GenericArrayData(items.map(toCatalyst(_, e)).toArray)
    case (JArray(pairs), MapType(k, v, _)) =>
      val (keys, values) = pairs.map {
        case JArray(List(key, value)) => (toCatalyst(key, k), toCatalyst(value, v))
        case other => throw new IllegalArgumentException(s"a map entry is [key, value], not $other")
      }.unzip
      ArrayBasedMapData(keys.toArray, values.toArray)
    case _ => throw new IllegalArgumentException(s"cannot read $json as ${dt.simpleString}")
  }

  def fromCatalyst(value: Any, dt: DataType): JValue = (value, dt) match {
    case (null, _) => JNull
    case (v: Byte, _) => JInt(v.toInt)
    case (v: Short, _) => JInt(v.toInt)
    case (v: Int, _) => JInt(v)
    case (v: Long, _) => JInt(v)
    case (v: Float, _) => JDouble(v.toDouble)
    case (v: Double, _) => JDouble(v)
    case (v: Decimal, _) => JString(v.toJavaBigDecimal.toPlainString)
    case (v: UTF8String, _) => JString(v.toString)
    case (v: Array[Byte], _) => JString(Base64.getEncoder.encodeToString(v))
    case (v: Boolean, _) => JBool(v)
    case (row: InternalRow, s: StructType) =>
      JObject(s.fields.toList.zipWithIndex.map { case (f, i) => f.name -> fromCatalyst(row.get(i, f.dataType), f.dataType) })
    case (array: ArrayData, ArrayType(e, _)) => JArray(array.toSeq[Any](e).toList.map(fromCatalyst(_, e)))
    case (map: MapData, MapType(k, v, _)) =>
      JArray(map.keyArray().toSeq[Any](k).zip(map.valueArray().toSeq[Any](v)).toList.map { case (key, value) =>
        JArray(List(fromCatalyst(key, k), fromCatalyst(value, v)))
      })
    case _ => throw new IllegalArgumentException(s"cannot write $value as ${dt.simpleString}")
  }
}
