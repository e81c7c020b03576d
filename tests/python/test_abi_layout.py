"""The ctypes side of the C ABI (stoker/_native.py) against what a C
compiler makes of stoker/stoker_c.h (tests/python/abi_layout_tool.c):
every structure's size, every member's offset and size in the same order,
and every named constant, so that a field added to one side and not the
other fails here rather than as garbage in a trainer."""
import ctypes
import json
import os
import subprocess

import pytest

from stoker import _native, errors


@pytest.fixture(scope="module")
def header():
    tool = os.environ.get("ABI_LAYOUT_TOOL")
    if not tool:
        pytest.skip("ABI_LAYOUT_TOOL is not set (run through ctest)")
    return json.loads(subprocess.run([tool], check=True, capture_output=True,
                                     text=True).stdout)


@pytest.mark.parametrize("name", ["ConsumerOptions", "InputStats", "BatchInfo",
                                  "FieldInfo"])
def test_structures_match_the_header(header, name):
    structure = getattr(_native, name)
    c = header["structs"][name]
    python = {field: [getattr(structure, field).offset,
                      getattr(structure, field).size]
              for field, _ in structure._fields_}
    assert list(python) == list(c["members"]), "members or their order differ"
    assert python == c["members"]
    assert ctypes.sizeof(structure) == c["size"]
    assert structure._fields_[0][0] == "struct_size"
    assert structure().struct_size == c["size"]


def test_constants_match_the_header(header):
    constants = header["constants"]
    assert _native.ABI_VERSION == constants["STOKER_C_ABI_VERSION"]
    named = {"STATUS_OK", "STATUS_NEXT_TIMED_OUT", "DTYPE_UINT8",
             "DTYPE_FLOAT32", "DTYPE_FLOAT16", "DTYPE_INT64", "FIELD_IMAGE",
             "FIELD_INT64", "FIELD_BYTES", "LAYOUT_NHWC", "LAYOUT_NCHW"}
    for name in named:
        assert getattr(_native, name) == constants["STOKER_" + name], name
    # The gRPC codes: errors names each, and maps each to its class.
    for name, value in constants.items():
        if name.startswith("STOKER_STATUS_") and 0 < value < 100:
            assert errors.CODE_NAMES[value] == name[len("STOKER_STATUS_"):]
            assert errors.from_code(value, "m").code == value
    assert len([n for n in constants if n.startswith("STOKER_STATUS_")]) == \
        len(errors.CODE_NAMES) + 2
