package org.apache.spark.sql.execution.streaming.state

import org.apache.hadoop.fs.{FSDataInputStream, FSDataOutputStream}
import org.apache.spark.sql.types.StructType

/**
 * Spark 3.5's reader and writer of an operator's schema file: a version line, then the key and value schemas
 * (`scala-spark4` has 4.x's list of column-family schemas).
 */
object SingleStateSchemaFormat {
  /** As 3.5's `StateSchemaCompatibilityChecker.readSchemaFile`, which reads only through a checker of a store. */
  def read(in: FSDataInputStream): Option[(StructType, StructType)] =
    Some(SchemaHelper.SchemaReader.createSchemaReader(in.readUTF()).read(in))

  /** As 3.5's checker writes it, in its format version (2). */
  def write(keySchema: StructType, valueSchema: StructType, out: FSDataOutputStream): Unit =
    SchemaHelper.SchemaWriter.createSchemaWriter(StateSchemaCompatibilityChecker.VERSION).write(keySchema,
      valueSchema, out)
}
