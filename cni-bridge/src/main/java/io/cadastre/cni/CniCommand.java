package io.cadastre.cni;

/** The CNI verbs, as carried by {@code CNI_COMMAND} (CNI spec 1.1 §Parameters, §CNI operations). */
public enum CniCommand {
    ADD,
    DEL,
    CHECK,
    GC,
    STATUS,
    VERSION;

    /**
     * @param value the decoded {@code CNI_COMMAND}, case-sensitive as in the spec
     * @throws CniException code 4 when absent, empty or not a CNI verb
     */
    public static CniCommand parse(String value) {
        if (value == null || value.isEmpty()) {
            throw new CniException(CniCodes.INVALID_ENVIRONMENT, "CNI_COMMAND is missing");
        }
        for (CniCommand c : values()) {
            if (c.name().equals(value)) {
                return c;
            }
        }
        throw new CniException(
                CniCodes.INVALID_ENVIRONMENT,
                "CNI_COMMAND "
                        + CniText.quoted(value)
                        + " is not one of ADD, DEL, CHECK, GC, STATUS, VERSION");
    }

    /** @return true for the verbs that act on one attachment (ADD, DEL, CHECK) */
    public boolean isAttachmentVerb() {
        return this == ADD || this == DEL || this == CHECK;
    }
}
