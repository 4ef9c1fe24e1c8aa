"""The JSON of a message, as Kafka's generated JsonConverters build it and Jackson prints it."""

from __future__ import annotations

import pytest

from storage_core.messages import jackson_text, java_double_text, to_json
from storage_core.messages.schemas import metadata_security, metadata_topics, transaction_log


def test_fields_in_declaration_order_with_lower_camel_names_and_defaults_of_tagged_fields_left_out() -> None:
    spec = metadata_topics.PARTITION_CHANGE_RECORD
    value = spec.new(PartitionId=0, TopicId="Uj5wn_FqTXirEASvVZRY1w", Isr=(0, 1, 2), Leader=1)
    assert jackson_text(to_json(spec, value, 0)) == (
        '{"partitionId":0,"topicId":"Uj5wn_FqTXirEASvVZRY1w","isr":[0,1,2],"leader":1}'
    )
    # Non-default tagged values print; fields of later versions do not exist in earlier ones.
    changed = value.replace(LeaderRecoveryState=1, Directories=("AAAAAAAAAAAAAAAAAAAAAQ",) * 3)
    assert jackson_text(to_json(spec, changed, 0)) == (
        '{"partitionId":0,"topicId":"Uj5wn_FqTXirEASvVZRY1w","isr":[0,1,2],"leader":1,"leaderRecoveryState":1}'
    )
    assert to_json(spec, changed, 1)["directories"] == ["AAAAAAAAAAAAAAAAAAAAAQ"] * 3


def test_untagged_nulls_print_as_null_and_absent_versions_not_at_all() -> None:
    spec = transaction_log.TRANSACTION_LOG_VALUE
    value = spec.new(ProducerId=5, ProducerEpoch=1, TransactionTimeoutMs=60000, TransactionPartitions=None)
    assert jackson_text(to_json(spec, value, 0)) == (
        '{"producerId":5,"producerEpoch":1,"transactionTimeoutMs":60000,"transactionStatus":0,'
        '"transactionPartitions":null,"transactionLastUpdateTimestampMs":0,"transactionStartTimestampMs":0}'
    )
    tagged = value.replace(PreviousProducerId=4, ClientTransactionVersion=2)
    printed = to_json(spec, tagged, 1)
    assert printed["previousProducerId"] == 4
    assert printed["clientTransactionVersion"] == 2
    assert "nextProducerId" not in printed  # still its default, -1


def test_bytes_print_as_standard_base64_and_floats_as_java_doubles() -> None:
    scram = metadata_security.USER_SCRAM_CREDENTIAL_RECORD
    value = scram.new(Name="alice", Mechanism=1, Salt=b"\xfb\xff", StoredKey=b"", ServerKey=b"key", Iterations=4096)
    assert jackson_text(to_json(scram, value, 0)) == (
        '{"name":"alice","mechanism":1,"salt":"+/8=","storedKey":"","serverKey":"a2V5","iterations":4096}'
    )
    quota = metadata_security.CLIENT_QUOTA_RECORD
    entity = quota.struct.field("Entity").type.element  # type: ignore[union-attr]
    value = quota.new(Entity=(entity.new(EntityType="user", EntityName=None),), Key="producer_byte_rate", Value=1.0e7)
    assert jackson_text(to_json(quota, value, 0)) == (
        '{"entity":[{"entityType":"user","entityName":null}],"key":"producer_byte_rate","value":1.0E7,"remove":false}'
    )


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.0, "0.0"),
        (-0.0, "-0.0"),
        (1.0, "1.0"),
        (1048576.0, "1048576.0"),
        (9999999.0, "9999999.0"),
        (1.0e7, "1.0E7"),
        (12345678.9, "1.23456789E7"),
        (0.001, "0.001"),
        (0.0001, "1.0E-4"),
        (-1.5e-5, "-1.5E-5"),
        (123.456, "123.456"),
        (1.7976931348623157e308, "1.7976931348623157E308"),
        (float("inf"), "Infinity"),
        (float("nan"), "NaN"),
    ],
)
def test_java_double_to_string(value: float, text: str) -> None:
    assert java_double_text(value) == text


def test_jackson_escapes_quotes_backslashes_and_control_characters_only() -> None:
    assert jackson_text('a"b\\c\n\t\r\b\f\x01\x1f\x7fé€😀/') == '"a\\"b\\\\c\\n\\t\\r\\b\\f\\u0001\\u001F\x7fé€😀/"'
    assert jackson_text({"k": [1, None, True, False, "s"]}) == '{"k":[1,null,true,false,"s"]}'
