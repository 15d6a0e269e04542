package io.cadastre.cni;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;

/**
 * Jackson set-up and typed field access with CNI error codes: a value of the wrong JSON type is
 * code 6 (decoding failure), a missing required value is code 7 (invalid network config). JSON
 * {@code null} counts as absent. Messages name the field by its path and never quote the document.
 */
final class Json {
    /**
     * Strict reader: duplicate keys and trailing tokens are errors; parse errors never carry the
     * source text (the netconf may hold credentials).
     */
    static final ObjectMapper MAPPER =
            JsonMapper.builder()
                    .disable(StreamReadFeature.INCLUDE_SOURCE_IN_LOCATION)
                    .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
                    .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
                    .build();

    private Json() {}

    /**
     * @param what what the document is, for messages ("netconf")
     * @return the document, an object
     * @throws CniException code 6 when empty, not JSON, or not an object
     */
    static ObjectNode parseObject(byte[] bytes, String what) {
        if (bytes == null || bytes.length == 0) {
            throw new CniException(CniCodes.DECODING_FAILURE, what + " is empty");
        }
        JsonNode tree;
        try {
            tree = MAPPER.readTree(bytes);
        } catch (JsonProcessingException e) {
            var loc = e.getLocation();
            String where =
                    loc == null
                            ? ""
                            : " (line " + loc.getLineNr() + ", column " + loc.getColumnNr() + ")";
            throw new CniException(CniCodes.DECODING_FAILURE, what + " is not valid JSON" + where);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        if (tree == null || tree.isMissingNode()) {
            throw new CniException(CniCodes.DECODING_FAILURE, what + " is empty");
        }
        if (!tree.isObject()) {
            throw new CniException(CniCodes.DECODING_FAILURE, what + " is not a JSON object");
        }
        return (ObjectNode) tree;
    }

    static byte[] bytes(JsonNode node) {
        try {
            return MAPPER.writeValueAsBytes(node);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    static JsonNode present(JsonNode parent, String field) {
        JsonNode v = parent.get(field);
        return v == null || v.isNull() ? null : v;
    }

    static String path(String parentPath, String field) {
        return parentPath.isEmpty() ? field : parentPath + "." + field;
    }

    static CniException wrongType(String path, String expected) {
        return new CniException(CniCodes.DECODING_FAILURE, path + " must be " + expected);
    }

    static CniException missing(String path) {
        return new CniException(CniCodes.INVALID_NETWORK_CONFIG, "missing required field " + path);
    }

    static String optString(JsonNode parent, String field, String parentPath) {
        JsonNode v = present(parent, field);
        if (v == null) {
            return null;
        }
        if (!v.isTextual()) {
            throw wrongType(path(parentPath, field), "a string");
        }
        return v.textValue();
    }

    static String reqString(JsonNode parent, String field, String parentPath) {
        String s = optString(parent, field, parentPath);
        if (s == null) {
            throw missing(path(parentPath, field));
        }
        return s;
    }

    static ObjectNode optObject(JsonNode parent, String field, String parentPath) {
        JsonNode v = present(parent, field);
        if (v == null) {
            return null;
        }
        if (!v.isObject()) {
            throw wrongType(path(parentPath, field), "an object");
        }
        return (ObjectNode) v;
    }

    static ArrayNode optArray(JsonNode parent, String field, String parentPath) {
        JsonNode v = present(parent, field);
        if (v == null) {
            return null;
        }
        if (!v.isArray()) {
            throw wrongType(path(parentPath, field), "an array");
        }
        return (ArrayNode) v;
    }

    /** @return the elements' text; code 6 when an element is not a string */
    static List<String> stringList(ArrayNode array, String path) {
        var out = new ArrayList<String>(array.size());
        for (int i = 0; i < array.size(); i++) {
            JsonNode e = array.get(i);
            if (!e.isTextual()) {
                throw wrongType(path + "[" + i + "]", "a string");
            }
            out.add(e.textValue());
        }
        return out;
    }

    /**
     * @return the integer, or null when absent
     * @throws CniException code 6 when not an integral number, code 7 when beyond 32 bits
     */
    static Integer optInt(JsonNode parent, String field, String parentPath) {
        Long v = optLong(parent, field, parentPath);
        if (v != null && (v < Integer.MIN_VALUE || v > Integer.MAX_VALUE)) {
            throw new CniException(
                    CniCodes.INVALID_NETWORK_CONFIG, path(parentPath, field) + " is out of range");
        }
        return v == null ? null : v.intValue();
    }

    /**
     * @return the integer, or null when absent
     * @throws CniException code 6 when not an integral number, code 7 when beyond 64 bits
     */
    static Long optLong(JsonNode parent, String field, String parentPath) {
        JsonNode v = present(parent, field);
        if (v == null) {
            return null;
        }
        if (!v.isIntegralNumber()) {
            throw wrongType(path(parentPath, field), "an integer");
        }
        if (!v.canConvertToLong()) {
            throw new CniException(
                    CniCodes.INVALID_NETWORK_CONFIG, path(parentPath, field) + " is out of range");
        }
        return v.longValue();
    }
}
