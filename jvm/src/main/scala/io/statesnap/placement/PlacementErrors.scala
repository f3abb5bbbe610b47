package io.statesnap.placement

/**
 * A stored key that is not a key of its layout, or not in the partition Spark's partitioning writes it to: the
 * reason of the error the job that read it raises, naming the store around it (`tools.ToolErrors.misplacedEntry`).
 */
final class MisplacedKey(message: String) extends IllegalArgumentException(message)

/** The reasons a stored key is refused ([[MisplacedKey]]), each worded here. */
private[statesnap] object PlacementErrors {
  def notAKey(key: String, layout: String, why: String): MisplacedKey =
    new MisplacedKey(s"the stored key $key is not a key of $layout: $why")

  def writtenElsewhere(key: String, readFrom: Int, partitions: Int, writtenTo: Int): MisplacedKey =
    new MisplacedKey(s"the stored key $key was read from partition $readFrom, and Spark's partitioning of " +
      s"$partitions partitions writes it to partition $writtenTo: the store holds a key its operator never wrote there")
}
