"""Records of `__transaction_state` (`transaction-coordinator/src/main/resources/common/message/`).

```
type 0  TransactionLogKey    TransactionalId
        TransactionLogValue  v0-1 (flexible 1+): ProducerId [PreviousProducerId tag 0] [NextProducerId tag 1]
                             ProducerEpoch [NextProducerEpoch tag 3] TransactionTimeoutMs TransactionStatus
                             TransactionPartitions[Topic PartitionIds[]] (nullable)
                             TransactionLastUpdateTimestampMs TransactionStartTimestampMs
                             [ClientTransactionVersion tag 2]
```

TransactionStatus: 0 Empty, 1 Ongoing, 2 PrepareCommit, 3 PrepareAbort, 4 CompleteCommit,
5 CompleteAbort, 6 Dead, 7 PrepareEpochFence. A null value is a tombstone. NextProducerEpoch
(tag 3) is Kafka 4.4.0's (its generated TransactionLogValue).
"""

from __future__ import annotations

from storage_core.messages.schema import INT8, INT16, INT32, INT64, STRING, array, field, message, struct

TRANSACTION_LOG_KEY = message(
    "TransactionLogKey",
    field("TransactionalId", STRING, "0"),
    valid="0",
    flexible="none",
)

TRANSACTION_LOG_VALUE = message(
    "TransactionLogValue",
    field("ProducerId", INT64, "0+"),
    field("PreviousProducerId", INT64, "1+", tagged="1+", tag=0, default=-1),
    field("NextProducerId", INT64, "1+", tagged="1+", tag=1, default=-1),
    field("ProducerEpoch", INT16, "0+"),
    field("NextProducerEpoch", INT16, "1+", tagged="1+", tag=3, default=-1),
    field("TransactionTimeoutMs", INT32, "0+"),
    field("TransactionStatus", INT8, "0+"),
    field(
        "TransactionPartitions",
        array(struct("PartitionsSchema", field("Topic", STRING, "0+"), field("PartitionIds", array(INT32), "0+"))),
        "0+",
        nullable="0+",
    ),
    field("TransactionLastUpdateTimestampMs", INT64, "0+"),
    field("TransactionStartTimestampMs", INT64, "0+"),
    field("ClientTransactionVersion", INT16, "1+", tagged="1+", tag=2, default=0),
    valid="0-1",
    flexible="1+",
)

RECORD_TYPES = {0: (TRANSACTION_LOG_KEY, TRANSACTION_LOG_VALUE)}  # record type -> (key, value)
