/** Absolute path of the built console (dist/, with a trailing slash). */
export declare const consoleDir: string;
/** Whether the console has been built (dist/index.html exists). */
export declare function consoleBuilt(): boolean;
