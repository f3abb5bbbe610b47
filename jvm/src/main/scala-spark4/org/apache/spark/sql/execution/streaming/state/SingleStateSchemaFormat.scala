package org.apache.spark.sql.execution.streaming.state

import org.apache.hadoop.fs.{FSDataInputStream, FSDataOutputStream}
import org.apache.spark.sql.types.StructType

/**
 * Spark 4.x's reader and writer of the schema file of an operator without column families: format v2 as a list of
 * column-family schemas, whose one entry is the default family (`scala-spark3` has 3.5's key/value pair).
 */
object SingleStateSchemaFormat {
  def read(in: FSDataInputStream): Option[(StructType, StructType)] =
    StateSchemaCompatibilityChecker.readSchemaFile(in).headOption.map(s => (s.keySchema, s.valueSchema))

  /**
   * Writes as Spark's `StateSchemaCompatibilityChecker` does (whose constructor needs the thread's active session on
   * Spark 4.0, which neither a listener nor an executor has).
   */
  def write(keySchema: StructType, valueSchema: StructType, out: FSDataOutputStream): Unit =
    SchemaHelper.SchemaWriter.createSchemaWriter(2).write(List(StateStoreColFamilySchema(
      StateStore.DEFAULT_COL_FAMILY_NAME, 0, keySchema, 0, valueSchema)), out)
}
