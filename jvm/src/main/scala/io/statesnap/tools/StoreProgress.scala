package io.statesnap.tools

/**
 * What an offline verb's Spark job says as each of its `stores` ends (`migrate`'s rewrite in place, a move's stores
 * written anew): a line on stderr (stdout carries the verb's result, text or `--json` for a caller that parses it),
 * with the time elapsed and an estimate of the time left, a job taking a while. Each store's task returns its failure
 * rather than throwing it, so that every task has ended, committed or not, when the job returns: [[rethrow]] then
 * throws the first, and a rollback after it cannot race a commit.
 */
private[tools] final class StoreProgress(verb: String, stores: Int) {
  private val started = System.nanoTime()
  private var done = 0
  private val failures = Seq.newBuilder[Throwable]

  /** Says that `store` ended with `result`: what `committed` says of it, or its failure, kept for [[rethrow]]. */
  def ended[A](store: String, result: Either[Throwable, A])(committed: A => String): Unit = {
    done += 1
    val outcome = result.fold({ e => failures += e; s"failed: $e" }, committed)
    val elapsedMs = (System.nanoTime() - started) / 1000000
    val left = if (done == stores) "" else s", about ${elapsedMs * (stores - done) / done / 1000 + 1} s left"
    System.err.println(s"statesnap $verb: $store $outcome ($done of $stores stores, $elapsedMs ms$left)")
  }

  /** Throws the first failure reported, if any: once every store has ended. */
  def rethrow(): Unit = failures.result().headOption.foreach(e => throw e)
}
