/* Planted stub (testbed/layering-planted/README.md). */
