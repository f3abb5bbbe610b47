package io.statesnap.evolution

import org.apache.spark.sql.types.{ArrayType, DataType, MapType, StructType}

/**
 * A schema as refusals print it: Spark's `simpleString` with `NOT NULL` after every field, element and map value
 * that may not be null, since a non-nullable field is often what a refusal is about and `simpleString` hides it.
 */
object SchemaText {
  def of(dataType: DataType): String = dataType match {
    case s: StructType =>
      s.fields.map(f => s"${f.name}:${of(f.dataType)}${notNull(f.nullable)}").mkString("struct<", ",", ">")
    case ArrayType(element, containsNull) => s"array<${of(element)}${notNull(containsNull)}>"
    case MapType(key, value, valueContainsNull) => s"map<${of(key)},${of(value)}${notNull(valueContainsNull)}>"
    case other => other.simpleString
  }

  private def notNull(nullable: Boolean): String = if (nullable) "" else " NOT NULL"
}
